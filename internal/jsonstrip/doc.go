// Package jsonstrip removes the managedFields of Kubernetes objects from the JSON of API responses
// (watch event streams and lists) before a client decodes them. A cache that drops managedFields
// anyway then never decodes them: they are often half of a custom resource's JSON, which is decoded
// field by field with reflection, several passes over its bytes.
//
// It finds where values end without validating them (the decoder that reads its output does), and
// removes nothing but the managedFields member of each object's metadata:
//
//	resp.Body = jsonstrip.NewReader(resp.Body, jsonstrip.Events) // a watch stream
package jsonstrip
