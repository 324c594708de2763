//go:build integration

package optest_test

import (
	"testing"

	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts the control plane of the package's integration tests (go test -tags integration);
// the unit tests need none.
func TestMain(m *testing.M) {
	harness.Main(m)
}
