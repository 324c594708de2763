//go:build integration

package harness_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/convergo-dev/convergo/testing/harness"
)

// webhookTestLabel selects the ConfigMaps of testdata/webhook's configurations.
const webhookTestLabel = "convergo.dev/webhook-test"

// configMapHooks are the test's webhooks for ConfigMaps: the defaulter adds data "defaulted-by", the
// validator rejects data "reject".
type configMapHooks struct{}

func (configMapHooks) Default(_ context.Context, cm *corev1.ConfigMap) error {
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["defaulted-by"] = "the test's webhook server"
	return nil
}

func (configMapHooks) ValidateCreate(_ context.Context, cm *corev1.ConfigMap) (admission.Warnings, error) {
	if _, ok := cm.Data["reject"]; ok {
		return nil, errors.New("rejected by the test's webhook server")
	}
	return nil, nil
}

func (h configMapHooks) ValidateUpdate(ctx context.Context, _, cm *corev1.ConfigMap) (admission.Warnings, error) {
	return h.ValidateCreate(ctx, cm)
}

func (configMapHooks) ValidateDelete(context.Context, *corev1.ConfigMap) (admission.Warnings, error) {
	return nil, nil
}

// TestWebhooksAreCalled shows the API server calling the test's webhook server through the
// configurations of testdata/webhook (kubebuilder's config/webhook layout), which TestMain installs with
// WithWebhooks: without the install, nothing is defaulted and nothing rejected.
func TestWebhooksAreCalled(t *testing.T) {
	env := harness.Default()
	if env.Webhooks == nil {
		t.Fatal("env.Webhooks is nil: TestMain installs testdata/webhook")
	}
	if diff := cmp.Diff([]string{"harness-test-mutating-webhook-configuration"}, names(env.Webhooks.MutatingWebhooks)); diff != "" {
		t.Errorf("mutating configurations (-want +got):\n%s", diff)
	}
	ns := env.Namespace(t)
	env.StartManager(t, func(mgr manager.Manager) error {
		return builder.WebhookManagedBy(mgr, &corev1.ConfigMap{}).
			WithDefaulter(configMapHooks{}).
			WithValidator(configMapHooks{}).
			Complete()
	})

	tests := map[string]struct {
		labels   map[string]string
		data     map[string]string
		wantData map[string]string
		wantErr  string
	}{
		"selected: defaulted": {
			labels:   map[string]string{webhookTestLabel: "true"},
			data:     map[string]string{"k": "v"},
			wantData: map[string]string{"k": "v", "defaulted-by": "the test's webhook server"},
		},
		"selected: rejected": {
			labels:  map[string]string{webhookTestLabel: "true"},
			data:    map[string]string{"reject": "yes"},
			wantErr: "rejected by the test's webhook server",
		},
		"not selected: untouched": {
			data:     map[string]string{"reject": "yes"},
			wantData: map[string]string{"reject": "yes"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "hooked-", Labels: tc.labels},
				Data:       tc.data,
			}
			err := env.Client.Create(t.Context(), cm)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("create: err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if diff := cmp.Diff(tc.wantData, cm.Data); diff != "" {
				t.Errorf("data of the created ConfigMap (-want +got):\n%s", diff)
			}
		})
	}
}

func names[T interface{ GetName() string }](objs []T) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

// TestWebhookConfigurationsPointAtTheTestServer checks the rewritten client configurations: a local
// URL instead of the Service, and the CA of the serving certificate.
func TestWebhookConfigurationsPointAtTheTestServer(t *testing.T) {
	env := harness.Default()
	got := env.WebhookOptions()
	if got.Host != "127.0.0.1" || got.Port <= 0 || got.CertDir == "" {
		t.Errorf("WebhookOptions() = %+v, want host 127.0.0.1, a port and a certificate directory", got)
	}
	for _, hook := range env.Webhooks.ValidatingWebhooks[0].Webhooks {
		cc := hook.ClientConfig
		if cc.Service != nil || cc.URL == nil || !strings.HasPrefix(*cc.URL, "https://127.0.0.1:") || len(cc.CABundle) == 0 {
			t.Errorf("webhook %s clientConfig: service %v, url %v, caBundle of %d bytes; want the local URL and the CA", hook.Name, cc.Service, cc.URL, len(cc.CABundle))
		}
	}
}

// TestWithWebhookServer: an environment started with WithWebhookServer serves the webhooks itself, so a
// test creates through them with no manager of its own, and a manager it starts (serving no webhook)
// does not clash with the environment's server.
func TestWithWebhookServer(t *testing.T) {
	env, err := harness.Start(t.Context(), harness.WithWebhooks("testdata/webhook"),
		harness.WithWebhookServer(func(mgr manager.Manager) error {
			return builder.WebhookManagedBy(mgr, &corev1.ConfigMap{}).WithDefaulter(configMapHooks{}).WithValidator(configMapHooks{}).Complete()
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	ns := env.Namespace(t)
	create := func() (map[string]string, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "hooked-", Labels: map[string]string{webhookTestLabel: "true"}},
			Data: map[string]string{"k": "v"}}
		err := env.Client.Create(t.Context(), cm)
		return cm.Data, err
	}
	want := map[string]string{"k": "v", "defaulted-by": "the test's webhook server"}
	got, err := create()
	if err != nil {
		t.Fatalf("create without a manager: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("created without a manager (-want +got):\n%s", diff)
	}
	env.StartManager(t, func(mgr manager.Manager) error {
		return builder.WebhookManagedBy(mgr, &corev1.ConfigMap{}).WithDefaulter(configMapHooks{}).Complete()
	})
	if got, err = create(); err != nil {
		t.Fatalf("create beside a manager: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("created beside a manager (-want +got):\n%s", diff)
	}
}
