package deploy

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestSamplesAndPrerequisites(t *testing.T) {
	cases := map[string]struct {
		samples []string
		secrets []string // namespace/name: key
	}{
		"memcached": {samples: []string{"Memcached.cache.convergo.dev/team-a/sessions"}},
		"welcome":   {samples: []string{"Welcome.web.convergo.dev/team-a/alice"}, secrets: []string{"team-a/alice-password: password"}},
	}
	for ex, tc := range cases {
		t.Run(ex, func(t *testing.T) {
			op, err := LoadOperator(filepath.Join("..", "..", ex), "")
			if err != nil {
				t.Fatal(err)
			}
			samples, err := op.Samples("team-a")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.samples, ids(samples)); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
			secrets, err := Prerequisites(samples)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range secrets {
				for key, value := range s.Data {
					got = append(got, s.Namespace+"/"+s.Name+": "+key)
					if n := len(value); n < 20 {
						t.Errorf("password of %d bytes, want a random one of 24", n)
					}
					if _, err := base64.RawURLEncoding.DecodeString(string(value)); err != nil {
						t.Errorf("password is not URL-safe text: %v", err)
					}
				}
				if s.Labels[ManagedByLabel] != FieldOwner {
					t.Errorf("Secret %s is not labelled %s=%s, so Undeploy would keep it", s.Name, ManagedByLabel, FieldOwner)
				}
			}
			if diff := cmp.Diff(tc.secrets, got); diff != "" {
				t.Errorf("password Secrets (-want +got):\n%s", diff)
			}
			if len(secrets) > 0 {
				again, _ := Prerequisites(samples)
				if string(again[0].Data["password"]) == string(secrets[0].Data["password"]) {
					t.Error("two calls gave the same password")
				}
			}
		})
	}
}

func TestOtherManagers(t *testing.T) {
	cases := map[string]struct {
		entries []metav1.ManagedFieldsEntry
		want    []string
	}{
		"only deploy": {entries: []metav1.ManagedFieldsEntry{{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply}}},
		"status writers do not count": {entries: []metav1.ManagedFieldsEntry{
			{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply},
			{Manager: "kube-apiserver", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
		}},
		"the demo created it": {
			entries: []metav1.ManagedFieldsEntry{
				{Manager: "demo", Operation: metav1.ManagedFieldsOperationUpdate},
				{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply},
				{Manager: "demo", Operation: metav1.ManagedFieldsOperationApply},
			},
			want: []string{"demo"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{ManagedFields: tc.entries}
			if diff := cmp.Diff(tc.want, OtherManagers(obj)); diff != "" {
				t.Errorf("OtherManagers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadyCondition(t *testing.T) {
	cond := func(typ, status string, gen int64) any {
		return map[string]any{"type": typ, "status": status, "reason": "R", "observedGeneration": gen}
	}
	cases := map[string]struct {
		generation int64
		conditions []any
		want       bool
	}{
		"ready":                     {generation: 2, conditions: []any{cond("Ready", "True", 2)}, want: true},
		"ready for an older spec":   {generation: 3, conditions: []any{cond("Ready", "True", 2)}},
		"not ready":                 {generation: 1, conditions: []any{cond("Ready", "False", 1), cond("Stalled", "True", 1)}},
		"no conditions":             {generation: 1},
		"reconciling without ready": {generation: 1, conditions: []any{cond("Reconciling", "True", 1)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetGeneration(tc.generation)
			if tc.conditions != nil {
				if err := unstructured.SetNestedSlice(u.Object, tc.conditions, "status", "conditions"); err != nil {
					t.Fatal(err)
				}
			}
			got, state := readyCondition(u)
			if got != tc.want {
				t.Errorf("readyCondition = %v (%s), want %v", got, state, tc.want)
			}
		})
	}
}

// TestWriteKubeconfig checks the operator's kubeconfig: the current context only, credentials
// embedded (the original names files next to it), the ServiceAccount impersonated.
func TestWriteKubeconfig(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"ca.crt": "CA", "admin.crt": "CERT", "admin.key": "KEY"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	in := clientcmdapi.NewConfig()
	in.Clusters["local"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthority: "ca.crt"}
	in.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://prod.example:6443"}
	in.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificate: "admin.crt", ClientKey: "admin.key"}
	in.AuthInfos["prod"] = &clientcmdapi.AuthInfo{Token: "secret"}
	in.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	in.Contexts["prod"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "prod"}
	in.CurrentContext = "local"
	from := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*in, from); err != nil {
		t.Fatal(err)
	}
	op := &Operator{Namespace: "welcome-system", ServiceAccount: "welcome-controller-manager"}
	path := filepath.Join(t.TempDir(), "run", "kubeconfig")
	if err := op.WriteKubeconfig(from, path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{
		"host": cfg.Host, "ca": string(cfg.CAData), "cert": string(cfg.CertData), "key": string(cfg.KeyData),
		"as": cfg.Impersonate.UserName, "as-groups": strings.Join(cfg.Impersonate.Groups, ","),
	}
	want := map[string]string{
		"host": "https://127.0.0.1:6443", "ca": "CA", "cert": "CERT", "key": "KEY",
		"as":        "system:serviceaccount:welcome-system:welcome-controller-manager",
		"as-groups": "system:serviceaccounts,system:serviceaccounts:welcome-system,system:authenticated",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the operator's kubeconfig as a rest.Config (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "prod") {
		t.Errorf("the operator's kubeconfig holds another context:\n%s", data)
	}
	if st, err := os.Stat(path); err != nil {
		t.Error(err)
	} else if st.Mode().Perm() != 0o600 {
		t.Errorf("the operator's kubeconfig (credentials) has mode %v, want 0600", st.Mode().Perm())
	}

	imp := op.Impersonate(&rest.Config{Host: "https://h"})
	if diff := cmp.Diff(want["as"], imp.Impersonate.UserName); diff != "" {
		t.Errorf("Impersonate user (-want +got):\n%s", diff)
	}
}
