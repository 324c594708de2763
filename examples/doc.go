// Package examples holds Convergo's example operators (memcached, welcome) and the demo that runs them;
// see README.md. The package itself has no code. Its test checks that every test of the examples
// imports only public packages (no path element "internal"), so that a user can copy any example test
// into another module whole:
//
//	go test ./examples/
//
// What only this repository needs (its manifests, Dockerfiles and generated files are current) is
// tested in examples/internal, in those packages' own tests.
package examples
