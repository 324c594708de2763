//go:build integration

package graph_test

import (
	"testing"

	"github.com/convergo-dev/convergo/reconcile/internal/fixture"
	"github.com/convergo-dev/convergo/testing/harness"
)

// The integration tests run against a real kube-apiserver and etcd (plain harness mode: no
// controller-manager, so no garbage collection and no Deployment controller).
func TestMain(m *testing.M) { harness.Main(m) }

const waitTimeout = fixture.WaitTimeout
