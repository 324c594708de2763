package member

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// kubeconfig returns a kubeconfig naming server.
func kubeconfig(server string) []byte {
	return []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`)
}

// TestSecretReconciler: the set follows the Secrets: a Secret adds its member, a changed kubeconfig
// replaces it, a renamed member replaces the old name, a deleted Secret removes it; an unchanged
// Secret makes no new cluster, and a kubeconfig that cannot be read is an error naming the Secret.
func TestSecretReconciler(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "east", Namespace: "hub", Labels: map[string]string{SecretLabel: "east"}},
		Data:       map[string][]byte{SecretKey: kubeconfig("https://east.example:6443")},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sec).Build()
	set := NewSet(&fakeManager{})
	var made []string
	r := &secretReconciler{set: set, namespace: "hub", reader: c, loaded: map[string]loaded{},
		newCluster: func(name string, cfg *rest.Config) (cluster.Cluster, error) {
			made = append(made, name+" "+cfg.Host)
			return newFakeCluster(), nil
		}}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sec)}
	steps := []struct {
		name      string
		change    func()
		wantNames []string
		wantErr   string
	}{
		{name: "added", wantNames: []string{"east"}},
		{name: "unchanged", wantNames: []string{"east"}},
		{name: "new kubeconfig", change: func() { sec.Data[SecretKey] = kubeconfig("https://east-2.example:6443") }, wantNames: []string{"east"}},
		{name: "renamed", change: func() { sec.Labels[SecretLabel] = "eu" }, wantNames: []string{"eu"}},
		{name: "unreadable", change: func() { sec.Data[SecretKey] = []byte("{") }, wantNames: []string{"eu"}, wantErr: "hub/east"},
		{name: "deleted", change: func() {
			if err := c.Delete(t.Context(), sec); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, s := range steps {
		if s.change != nil {
			s.change()
			if s.name != "deleted" {
				if err := c.Update(t.Context(), sec); err != nil {
					t.Fatal(err)
				}
			}
		}
		_, err := r.Reconcile(t.Context(), req)
		if (err != nil) != (s.wantErr != "") || err != nil && !strings.Contains(err.Error(), s.wantErr) {
			t.Errorf("%s: Reconcile = %v, want an error naming %q", s.name, err, s.wantErr)
		}
		if diff := cmp.Diff(s.wantNames, set.Names(), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: members (-want +got):\n%s", s.name, diff)
		}
	}
	want := []string{"east https://east.example:6443", "east https://east-2.example:6443", "eu https://east-2.example:6443"}
	if diff := cmp.Diff(want, made); diff != "" {
		t.Errorf("clusters made (-want +got):\n%s", diff)
	}
}
