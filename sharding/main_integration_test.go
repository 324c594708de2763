//go:build integration

package sharding

import (
	"testing"

	"github.com/convergo-dev/convergo/testing/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
