// Package jsonstrip removes the managedFields of Kubernetes objects from the JSON of API responses
// (watch event streams and lists) before a client decodes them. A cache that drops managedFields
// anyway then never decodes them: they are often half of a custom resource's JSON, which is decoded
// field by field with reflection, several passes over its bytes.
//
// It finds where values end without validating them (the decoder that reads its output does), and
// removes nothing but the managedFields member of each object's metadata:
//
//	resp.Body = jsonstrip.NewReader(resp.Body, jsonstrip.Events) // a watch stream
//
// It also reads a watch stream one event at a time and splits each event into its type and its
// object's JSON, for a decoder that decodes the object once, in place of client-go's passes:
//
//	frames := jsonstrip.NewFrames(resp.Body, jsonstrip.Events)
//	for {
//		event, err := frames.Next()
//		if err != nil {
//			return err // io.EOF at the end of the stream
//		}
//		typ, object, ok := jsonstrip.Event(event) // not ok: decode the event in full
//		...
//	}
package jsonstrip
