//go:build integration

package fakes_test

import (
	"testing"

	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts a real API server for the Injector tests.
func TestMain(m *testing.M) {
	harness.Main(m)
}
