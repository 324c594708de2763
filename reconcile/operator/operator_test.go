package operator

import (
	"flag"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// options is what a test compares of the manager options.
type options struct {
	Metrics, Probe, Pprof, LeaseID, LeaseNamespace string
	SecureMetrics, AuthorizedMetrics, LeaderElect  bool
	ReleaseOnCancel                                bool
	Workers, WebhookPort                           int
	WebhookCerts                                   string
}

func TestFlagsOptions(t *testing.T) {
	cases := map[string]struct {
		args []string
		want options
	}{
		"defaults": {
			want: options{Metrics: "0", Probe: ":8081", LeaseID: "x.example.com", SecureMetrics: true, AuthorizedMetrics: true, ReleaseOnCancel: true,
				WebhookPort: 9443},
		},
		"every flag": {
			args: []string{"--metrics-bind-address=:8443", "--metrics-secure=false", "--health-probe-bind-address=0", "--leader-elect",
				"--leader-election-namespace=ops", "--pprof-bind-address=127.0.0.1:6060", "--max-concurrent-reconciles=8", "--zap-log-level=debug",
				"--webhook-port=9000", "--webhook-cert-path=/certs"},
			want: options{Metrics: ":8443", Probe: "0", Pprof: "127.0.0.1:6060", LeaseID: "x.example.com", LeaseNamespace: "ops",
				LeaderElect: true, ReleaseOnCancel: true, Workers: 8, WebhookPort: 9000, WebhookCerts: "/certs"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var f Flags
			f.Bind(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			opts, err := f.options("x.example.com")
			if err != nil {
				t.Fatal(err)
			}
			got := options{
				Metrics: opts.Metrics.BindAddress, Probe: opts.HealthProbeBindAddress, Pprof: opts.PprofBindAddress,
				LeaseID: opts.LeaderElectionID, LeaseNamespace: opts.LeaderElectionNamespace,
				SecureMetrics: opts.Metrics.SecureServing, AuthorizedMetrics: opts.Metrics.FilterProvider != nil,
				LeaderElect: opts.LeaderElection, ReleaseOnCancel: opts.LeaderElectionReleaseOnCancel,
				Workers:     opts.Controller.MaxConcurrentReconciles,
				WebhookPort: f.Webhook.Port, WebhookCerts: f.Webhook.CertDir,
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFlagsZeroValue: a Flags filled in by a test serves nothing it did not ask for.
func TestFlagsZeroValue(t *testing.T) {
	opts, err := (&Flags{}).options("x")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"0", "", ""}, []string{opts.Metrics.BindAddress, opts.HealthProbeBindAddress, opts.PprofBindAddress}); diff != "" {
		t.Errorf("metrics, probe, pprof addresses (-want +got):\n%s", diff)
	}
}

// TestOptionsScheme: client-go's kinds and those of the given adders.
func TestOptionsScheme(t *testing.T) {
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	add := func(s *runtime.Scheme) error {
		s.AddKnownTypeWithName(widget, &corev1.ConfigMap{})
		return nil
	}
	opts, err := (&Flags{}).options("x", add)
	if err != nil {
		t.Fatal(err)
	}
	got := []bool{opts.Scheme.Recognizes(appsv1.SchemeGroupVersion.WithKind("Deployment")), opts.Scheme.Recognizes(widget)}
	if diff := cmp.Diff([]bool{true, true}, got); diff != "" {
		t.Errorf("recognizes Deployment, Widget (-want +got):\n%s", diff)
	}
}
