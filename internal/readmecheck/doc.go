// Package readmecheck holds the test that builds every Go block of the top-level README.md, so that
// what a newcomer copies first compiles.
//
//	go test ./internal/readmecheck/
package readmecheck
