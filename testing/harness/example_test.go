//go:build integration

package harness_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/testing/harness"
)

// Requests are plain data: count them by verb and resource, or print them as a table in a test log.
func ExampleRequests() {
	reqs := harness.Requests{
		harness.ParseRequest("POST", "/api/v1/namespaces/demo/configmaps", ""),
		harness.ParseRequest("GET", "/api/v1/namespaces/demo/configmaps/settings", ""),
		harness.ParseRequest("GET", "/api/v1/namespaces/demo/configmaps", "true"),
		harness.ParseRequest("PATCH", "/apis/apps/v1/namespaces/demo/deployments/web/status", ""),
	}
	fmt.Println("writes:", reqs.Writes())
	fmt.Println("status patches:", reqs.Count("patch", "deployments/status"))
	fmt.Print(reqs)
	// Output:
	// writes: 2
	// status patches: 1
	// VERB    RESOURCE            COUNT
	// create  configmaps          1
	// get     configmaps          1
	// watch   configmaps          1
	// patch   deployments/status  1
	// total                       4
}

// A typical integration test: TestMain calls harness.Main once per package, each test takes a fresh
// namespace, and a RequestCounter shows what a controller sent.
func ExampleEnv_Namespace() {
	// func TestMain(m *testing.M) { harness.Main(m) }
	testSomething := func(t *testing.T) {
		env := harness.Default()
		ns := env.Namespace(t)
		counter := harness.NewRequestCounter()
		c := env.ClientFor(t, counter.Wrap(env.Config))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
		if err := c.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		harness.WaitForObject(t, env.Client, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}, time.Minute, nil)
		if got := counter.Snapshot().Count("create", "configmaps"); got != 1 {
			t.Errorf("creates = %d, want 1\n%s", got, counter.Snapshot())
		}
	}
	_ = testSomething
}

// A test of an operator's webhooks: TestMain installs kubebuilder's config/webhook pointing at the
// test's webhook server, and a manager started by the harness serves the webhooks its setup registers.
func ExampleWithWebhooks() {
	// func TestMain(m *testing.M) {
	//	harness.Main(m, harness.WithCRDPaths("../config/crd/bases"), harness.WithWebhooks("../config/webhook"))
	// }
	testDefaulting := func(t *testing.T) {
		env := harness.Default()
		ns := env.Namespace(t)
		env.StartManager(t, func(mgr manager.Manager) error {
			// The path, /mutate--v1-configmap, is the one controller-gen writes into manifests.yaml.
			return builder.WebhookManagedBy(mgr, &corev1.ConfigMap{}).WithDefaulter(configMapDefaulter{}).Complete()
		})
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
		if err := env.Client.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		if cm.Data["defaulted-by"] == "" {
			t.Errorf("the API server did not call the defaulting webhook: %v", cm.Data)
		}
	}
	_ = testDefaulting
	// An operator's main started by the test serves them with its own webhook server instead:
	//	srv := webhook.NewServer(env.WebhookOptions())
	//	env.WaitForWebhookServer(t, time.Minute) // once the operator runs
}

// configMapDefaulter is the webhook of ExampleWithWebhooks.
type configMapDefaulter struct{}

func (configMapDefaulter) Default(_ context.Context, cm *corev1.ConfigMap) error {
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["defaulted-by"] = "webhook"
	return nil
}
