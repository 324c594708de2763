//go:build integration

package fullclustertest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/convergo-dev/convergo/testing/harness"
)

// hooks serve testdata/webhook's configurations: the defaulter adds data "defaulted-by", the validator
// accepts everything.
type hooks struct{}

func (hooks) Default(_ context.Context, cm *corev1.ConfigMap) error {
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["defaulted-by"] = "the test's webhook server"
	return nil
}

// TestWebhooksAreCalled shows the full cluster's API server calling the test's webhook server through
// the configurations TestMain installs with WithWebhooks.
func TestWebhooksAreCalled(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	env.StartManager(t, func(mgr manager.Manager) error {
		return builder.WebhookManagedBy(mgr, &corev1.ConfigMap{}).WithDefaulter(hooks{}).WithValidator(hooks{}).Complete()
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: "hooked", Labels: map[string]string{"convergo.dev/webhook-test": "true"},
	}}
	if err := env.Client.Create(t.Context(), cm); err != nil {
		t.Fatalf("create: %v", err)
	}
	if diff := cmp.Diff(map[string]string{"defaulted-by": "the test's webhook server"}, cm.Data); diff != "" {
		t.Errorf("data of the created ConfigMap (-want +got):\n%s", diff)
	}
}

func (hooks) ValidateCreate(context.Context, *corev1.ConfigMap) (admission.Warnings, error) {
	return nil, nil
}

func (hooks) ValidateUpdate(context.Context, *corev1.ConfigMap, *corev1.ConfigMap) (admission.Warnings, error) {
	return nil, nil
}

func (hooks) ValidateDelete(context.Context, *corev1.ConfigMap) (admission.Warnings, error) {
	return nil, nil
}
