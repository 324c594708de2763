//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
)

// TestDemo runs the whole demo on a full local cluster (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and one kwok node): the samples converge, the Welcome recovers from its missing Secret,
// both scale up, the Welcome's page is served by a local web server with the configuration the operator
// rendered, follows a rename after the rollout, and both operators delete their children in reverse
// order. Then the Database operator, on a private PostgreSQL (testing/postgres: Debian's postgresql,
// which `make test` installs as root), converges a Database whose Secret's URI connects, sets back a
// password the admin changed, and on deletion revokes the grant, drops the database, then the role, and
// removes its finalizer last. Then the tenancy operator, with the local cluster as its hub and two
// more kube-apiservers as member clusters named by kubeconfig Secrets, places a Tenant in both,
// moves it out of one and deletes it. Each time the page is served, a subtest TestDemo/Chromium_<name> opens it
// in headless Chromium (`apt-get install -y chromium`), checks that it greets the Welcome's name and
// keeps a screenshot (see openInChromium). The operators' traces go to a private Jaeger, and the
// reconcile that scaled the Welcome is read back from it, updating the Deployment under it. It needs every control-plane binary (`make assets`; `make
// test` builds them first) and is skipped with -short.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo starts a full local cluster; skipped with -short")
	}
	var out bytes.Buffer
	opts := options{
		nodes: 1, timeout: 3 * time.Minute, runDir: t.TempDir(), traces: true,
		servePage: true, pagePort: ptr.To(0), // a free port: other tests may run beside this one
		openPage: func(ctx context.Context, url, name string) error {
			if !t.Run("Chromium "+name, func(t *testing.T) { openInChromium(ctx, t, url, name) }) {
				return fmt.Errorf("the page at %s does not greet %s in Chromium (see the subtest)", url, name)
			}
			return nil
		},
	}
	err := run(t.Context(), &out, opts)
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatalf("demo failed: %v", err)
	}
	for _, want := range []string{
		"Stalled=True (SecretNotFound)",
		"The reconcile that scaled Welcome alice, as Jaeger holds it",
		"apply deployment",
		`(greets "Hello Alice")`,
		`(greets "Hello Alice Liddell")`,
		"(accepts the password from the Secret, which the demo never prints)",
		"(ConfigMap/alice after Deployment/alice), in order.",
		"memcached-operator: Service/sessions, Deployment/sessions (Deployment/sessions after Service/sessions), in order.",
		"Credentials work: connected with the Secret's uri as demo_orders to database demo_orders",
		"the Secret's uri connects again and table items still has 3 of 3 rows.",
		"(Database/orders after role demo_orders; database demo_orders after grant to reporting; " +
			"database demo_orders after Secret/orders-credentials; role demo_orders after database demo_orders), in order.",
		`DROP ROLE IF EXISTS "demo_orders"`, // from PostgreSQL's log, after the REVOKE and the DROP DATABASE
		"Database orders deleted in order: in PostgreSQL, database demo_orders and role demo_orders are gone;",
		"Tenant payments: Ready, placed in eu-1, us-1.",
		"Tenant payments: Ready, placed in eu-1.",
		"Tenant payments deleted: no quota or access left in any member",
		"Done: every step went as expected.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output does not contain %q", want)
		}
	}
}
