// Package intent turns a desired object into its intent, the fields it sets as server-side apply sends
// them, hashes it, and judges whether a live object holds it, each list by its merge semantics from the
// kind's schema. It makes no API call; package apply is its one user.
//
//	in, err := intent.Of(deployment, scheme)
//	err = intent.Stamp(in) // the shape hash, so that a dropped field counts
//	same, path, err := intent.Holds(in, live, gvk, false)
package intent
