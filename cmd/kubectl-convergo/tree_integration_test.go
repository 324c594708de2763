//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/member"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/optest"
)

// Generous: the machine running the tests is often loaded.
const timeout = 3 * time.Minute

// TestMain starts a full local cluster (kwok runs the pods, so Deployments become Available) with
// kubectl and the Welcome CRD.
func TestMain(m *testing.M) {
	harness.Main(m,
		harness.WithFullCluster(),
		harness.WithKubectl(),
		harness.WithCRDPaths("../../examples/welcome/config/crd/bases"),
		harness.WithSchemeAdders(v1alpha1.AddToScheme),
	)
}

// TestIntegrationTree runs the Welcome operator, waits until a Welcome is Ready, adds a cluster-scoped
// object tracked as its child but applied without a graph, and runs the plugin: in process with
// -o json, and as `kubectl convergo tree` through kubectl, which finds the built binary on PATH. Both
// show the Welcome's children in graph order (the page and the Service, then the Deployment that
// depends on the page), each ready by its kind's check, and the ClusterRole without a node last; not
// the Endpoints and EndpointSlice, to which the endpoints controller copies the Service's labels.
func TestIntegrationTree(t *testing.T) {
	env := harness.Default()
	env.StartManager(t, controller.Setup(), harness.WithManagerOptions(func(o *manager.Options) { controller.CacheOptions(&o.Cache) }))
	ns := env.Namespace(t)

	w := &v1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice"},
		Spec:       v1alpha1.WelcomeSpec{Name: "Alice", Replicas: ptr.To[int32](2)},
	}
	if err := env.Client.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	harness.WaitForObject(t, env.Client, client.ObjectKeyFromObject(w), w, timeout,
		optest.ConditionsAre[*v1alpha1.Welcome](map[string]string{status.Ready: "True/Reconciled"}))

	extra := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-reader"}}
	if err := ownership.Track(w, extra, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), extra); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), extra); client.IgnoreNotFound(err) != nil {
			t.Errorf("delete %s: %v", extra.Name, err)
		}
	})

	child := func(node, apiVersion, kind string, check string, deps ...string) Child {
		return Child{Node: node, DependsOn: deps, APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: "alice", Ready: true, Check: check}
	}
	want := Tree{
		Owner: Owner{APIVersion: "web.convergo.dev/v1alpha1", Kind: "Welcome", Namespace: ns, Name: "alice", UID: string(w.UID),
			Ready: &Condition{Status: "True", Reason: "Reconciled", Message: "all 3 children ready"}},
		Children: []Child{
			child("page", "v1", "ConfigMap", "exists"),
			child("service", "v1", "Service", "ServiceReady"),
			child("deployment", "apps/v1", "Deployment", "DeploymentAvailable", "page"),
			{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: extra.Name, Ready: true, Check: "exists"},
		},
	}

	t.Run("in process, as JSON", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		args := []string{"tree", "welcome/alice", "-n", ns, "--kubeconfig", env.KubeconfigPath, "-o", "json"}
		if code := run(t.Context(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("run %q: exit code %d\n%s", args, code, stderr.String())
		}
		var got Tree
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
			t.Fatalf("decode %s: %v", stdout.String(), err)
		}
		// The operator's children were last written by its server-side apply, for the reconcile the
		// Welcome's creation brought; the ClusterRole the test created never was. The times are taken
		// over for the comparisons below.
		for i, c := range got.Children {
			applied := i < 3
			if applied && (c.Written == nil || c.Written.Manager != controller.Name || c.Written.Time.IsZero()) ||
				!applied && c.Written != nil {
				t.Errorf("%s %s written %+v; want by %s: %v", c.Kind, c.Name, c.Written, controller.Name, applied)
			}
			if i < len(want.Children) {
				want.Children[i].Written = c.Written
				// A Deployment carries no written-for annotation (its ReplicaSets would copy it).
				if applied && c.Kind != "Deployment" {
					want.Children[i].WrittenFor = "created"
				}
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("tree (-want +got):\n%s", diff)
		}
		if stderr.Len() > 0 {
			t.Errorf("warnings of an admin, who may list everything:\n%s", stderr.String())
		}
	})

	t.Run("a user who may read only the namespace's children", func(t *testing.T) {
		role := &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps", "services"}, Verbs: []string{"get", "list"}},
				{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list"}},
				{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"welcomes"}, Verbs: []string{"get"}},
			},
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "viewer"}},
		}
		for _, obj := range []client.Object{role, binding} {
			if err := env.Client.Create(t.Context(), obj); err != nil {
				t.Fatal(err)
			}
		}
		var stdout, stderr bytes.Buffer
		args := []string{"tree", "welcome", "alice", "-n", ns, "--kubeconfig", env.KubeconfigPath, "--as", "viewer", "-o", "json"}
		if code := run(t.Context(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("run %q: exit code %d\n%s", args, code, stderr.String())
		}
		var got Tree
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
			t.Fatalf("decode %s: %v", stdout.String(), err)
		}
		visible := want
		visible.Children = want.Children[:3] // not the ClusterRole
		if diff := cmp.Diff(visible, got); diff != "" {
			t.Errorf("tree (-want +got):\n%s", diff)
		}
		if !strings.Contains(stderr.String(), "clusterroles.rbac.authorization.k8s.io") {
			t.Errorf("no warning that cluster roles are not shown:\n%s", stderr.String())
		}
		if !strings.Contains(stderr.String(), "you may not list the Secrets in namespace convergo-system that name member clusters") {
			t.Errorf("no warning that member clusters are not shown:\n%s", stderr.String())
		}
	})

	t.Run("unknown resource", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		args := []string{"tree", "nosuchkinds", "alice", "-n", ns, "--kubeconfig", env.KubeconfigPath}
		if code := run(t.Context(), args, &stdout, &stderr); code == 0 {
			t.Fatalf("run %q: exit code 0, want an error", args)
		}
		if want := `resource "nosuchkinds": the server has no such resource (kubectl api-resources lists those it has)`; !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	})

	t.Run("requests", func(t *testing.T) {
		counter := harness.NewRequestCounter()
		c, err := newCluster(counter.Wrap(env.Config), func(format string, args ...any) { t.Errorf("warning: "+format, args...) })
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.mapping(t.Context(), "welcome")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.tree(t.Context(), m, ns, "alice"); err != nil {
			t.Fatal(err)
		}
		reqs := counter.Snapshot()
		discovery := len(reqs.Filter(func(r harness.Request) bool { return !r.ResourceRequest() }))
		// One read of the owner and one per child; the Endpoints and the EndpointSlice that carry the
		// Service's labels are left out by their metadata.
		if got, want := reqs.Filter(harness.Request.ResourceRequest).Count("get", ""), 5; got != want {
			t.Errorf("%d GETs, want %d:\n%s", got, want, reqs)
		}
		if got := reqs.Writes(); got != 0 {
			t.Errorf("%d writes, want none:\n%s", got, reqs)
		}
		t.Logf("one tree: %d discovery requests, %d lists (one per listable resource), %d reads", discovery, reqs.Count("list", ""), reqs.Filter(harness.Request.ResourceRequest).Count("get", ""))
	})

	t.Run("through kubectl", func(t *testing.T) {
		bin := t.TempDir()
		build := exec.CommandContext(t.Context(), "go", "build", "-o", filepath.Join(bin, "kubectl-convergo"), ".")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		kubectl := exec.CommandContext(t.Context(), env.KubectlPath, "convergo", "tree", "welcomes.web.convergo.dev", "alice",
			"--kubeconfig", env.KubeconfigPath, "--namespace", ns)
		kubectl.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		var stderr bytes.Buffer
		kubectl.Stderr = &stderr
		out, err := kubectl.Output()
		if err != nil {
			t.Fatalf("kubectl convergo tree: %v\n%s", err, stderr.String())
		}
		var table bytes.Buffer
		if err := printTable(&table, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(table.String(), string(out)); diff != "" {
			t.Errorf("kubectl convergo tree (-want +got):\n%s", diff)
		}
	})
}

// TestIntegrationTreeMemberClusters runs the plugin on a Welcome (no operator: the test writes its
// children) with a child in the hub and one in the member cluster east, a second kube-apiserver
// named by a Secret in the hub as package member reads them, and two members it cannot read: a
// Secret without a kubeconfig (north) and one whose API server does not answer (west). The member's
// child takes its place in graph order after the hub child it depends on, with CLUSTER east; the
// other two members are warnings. With --member east=<kubeconfig> instead of the Secrets, the same
// table and no warning.
func TestIntegrationTreeMemberClusters(t *testing.T) {
	env := harness.Default()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	east, err := harness.Start(ctx)
	if err != nil {
		t.Fatalf("start member cluster east: %v", err)
	}
	t.Cleanup(func() {
		if err := east.Stop(); err != nil {
			t.Errorf("stop member cluster east: %v", err)
		}
	})
	ns := env.Namespace(t)

	w := &v1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice"},
		Spec:       v1alpha1.WelcomeSpec{Name: "Alice", Replicas: ptr.To[int32](2)},
	}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	hubChild := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice", Annotations: map[string]string{marks.Node: "page"}}}
	memberChild := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice",
		Annotations: map[string]string{marks.Node: "config-east", marks.DependsOn: "page"}}}
	for _, obj := range []client.Object{hubChild, memberChild} {
		if err := ownership.Track(w, obj, env.Scheme); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Client.Create(ctx, hubChild); err != nil {
		t.Fatal(err)
	}
	if err := east.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := east.Client.Create(ctx, memberChild); err != nil {
		t.Fatal(err)
	}

	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: defaultMemberSecretsNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	eastConfig, err := os.ReadFile(east.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	unreachable := []byte(`{apiVersion: v1, kind: Config, current-context: c, clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}],
		users: [{name: u, user: {token: t}}], contexts: [{name: c, context: {cluster: c, user: u}}]}`)
	for name, data := range map[string]map[string][]byte{
		"east":  {member.SecretKey: eastConfig},
		"north": {"config": eastConfig},
		"west":  {member.SecretKey: unreachable},
	} {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: defaultMemberSecretsNamespace, Name: "member-" + name + "-" + ns,
				Labels: map[string]string{member.SecretLabel: name}},
			Data: data,
		}
		if err := env.Client.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := env.Client.Delete(context.Background(), secret); client.IgnoreNotFound(err) != nil {
				t.Errorf("delete Secret %s: %v", secret.Name, err)
			}
		})
	}

	want := Tree{
		Owner: Owner{APIVersion: "web.convergo.dev/v1alpha1", Kind: "Welcome", Namespace: ns, Name: "alice", UID: string(w.UID)},
		Children: []Child{
			{Node: "page", APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "alice", Ready: true, Check: "exists"},
			{Node: "config-east", DependsOn: []string{"page"}, Cluster: "east", APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "alice",
				Ready: true, Check: "exists"},
		},
	}
	var table bytes.Buffer
	if err := printTable(&table, &want); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		args []string
		// warnings are the starts of the lines on stderr, in order.
		warnings []string
	}{
		"members named by Secrets": {
			warnings: []string{
				`warning: member cluster "north": read Secret convergo-system/member-north-` + ns + `: no "kubeconfig" in its data; its children are not shown`,
				`warning: member cluster "west": reach its API server: `,
			},
		},
		"a member given by --member": {
			args: []string{"--member", "east=" + east.KubeconfigPath, "--member-secrets-namespace", ""},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"tree", "welcome/alice", "-n", ns, "--kubeconfig", env.KubeconfigPath}, tc.args...)
			if code := run(t.Context(), args, &stdout, &stderr); code != 0 {
				t.Fatalf("run %q: exit code %d\n%s", args, code, stderr.String())
			}
			if diff := cmp.Diff(table.String(), stdout.String()); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
			var lines []string
			for line := range strings.Lines(stderr.String()) {
				lines = append(lines, line)
			}
			if len(lines) != len(tc.warnings) {
				t.Fatalf("%d lines on stderr, want %d:\n%s", len(lines), len(tc.warnings), stderr.String())
			}
			for i, w := range tc.warnings {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("stderr line %d does not start %q:\n%s", i+1, w, lines[i])
				}
			}
		})
	}
}
