package localweb_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/examples/welcome/localweb"
)

// rendered returns the ConfigMap and the Deployment the Welcome operator renders for a Welcome named
// alice greeting name, the Deployment marked as rolled out, and the password Secret it names.
func rendered(t *testing.T, name string) (*corev1.ConfigMap, *appsv1.Deployment, *corev1.Secret) {
	t.Helper()
	w := &v1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "alice"},
		Spec: v1alpha1.WelcomeSpec{
			Name: name, Image: v1alpha1.DefaultImage, Replicas: ptr.To[int32](2), Port: 8088,
			Email: "alice@example.com", Groups: []string{"admins"},
			PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "alice-password", Key: "password"},
		},
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "alice-password", ResourceVersion: "7"},
		Data:       map[string][]byte{"password": []byte("s3cret")},
	}
	g, err := controller.Children(w, &metav1.PartialObjectMetadata{ObjectMeta: secret.ObjectMeta})
	if err != nil {
		t.Fatal(err)
	}
	var (
		cm  *corev1.ConfigMap
		dep *appsv1.Deployment
	)
	for _, n := range g.Nodes() {
		switch o := n.Object().(type) {
		case *corev1.ConfigMap:
			cm = o
		case *appsv1.Deployment:
			dep = o
		}
	}
	if cm == nil || dep == nil {
		t.Fatalf("the Welcome's children hold no ConfigMap or Deployment: %v", g.Nodes())
	}
	dep.Generation = 1
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	secret.ResourceVersion = ""
	return cm, dep, secret
}

func TestResolve(t *testing.T) {
	cm, _, _ := rendered(t, "Alice")
	page := cm.Data[controller.PageKey]
	cases := map[string]struct {
		change  func(d *appsv1.Deployment, cm *corev1.ConfigMap, s *corev1.Secret) []client.Object // returns extra objects
		want    *localweb.Config
		wantErr string
	}{
		"the operator's Deployment": {
			want: &localweb.Config{
				Deployment: types.NamespacedName{Namespace: "demo", Name: "alice"},
				Container:  "web",
				Env: []localweb.EnvVar{
					{Name: "NAME", Value: "Alice"},
					{Name: "PORT", Value: "8088"},
					{Name: "PAGE_FILE", Value: "/etc/welcome/page.html"},
					{Name: "PASSWORD", Value: "s3cret", From: "Secret/alice-password key password", Secret: true},
				},
				Mounts: []localweb.Mount{{
					Path: "/etc/welcome", Volume: "page", From: "ConfigMap/alice",
					Files: map[string][]byte{"page.html": []byte(page)},
					Mode:  map[string]int32{"page.html": 0o644},
				}},
				ReadinessPath: "/hello/",
			},
		},
		"envFrom, configMapKeyRef, args, items with modes and an emptyDir": {
			change: func(d *appsv1.Deployment, cm *corev1.ConfigMap, _ *corev1.Secret) []client.Object {
				pod := &d.Spec.Template.Spec
				c := &pod.Containers[0]
				c.ReadinessProbe = nil
				c.Args = []string{"--verbose", "$$(literal)", "cost: $5"}
				c.EnvFrom = []corev1.EnvFromSource{{Prefix: "X_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}}}}
				c.Env = []corev1.EnvVar{
					{Name: "X_B", Value: "overridden"},
					{Name: "FROM_CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}, Key: "a"}}},
					{Name: "OPTIONAL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k", Optional: ptr.To(true)}}},
				}
				pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
				pod.Volumes[0].ConfigMap.Items = []corev1.KeyToPath{{Key: controller.PageKey, Path: "sub/index.html", Mode: ptr.To[int32](0o400)}}
				c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp/"})
				return []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "extra"}, Data: map[string]string{"b": "2", "a": "1"}}}
			},
			want: &localweb.Config{
				Deployment: types.NamespacedName{Namespace: "demo", Name: "alice"},
				Container:  "web",
				Args:       []string{"--verbose", "$(literal)", "cost: $5"},
				Env: []localweb.EnvVar{
					{Name: "X_a", Value: "1", From: "ConfigMap/extra key a"},
					{Name: "X_b", Value: "2", From: "ConfigMap/extra key b"},
					{Name: "X_B", Value: "overridden"},
					{Name: "FROM_CM", Value: "1", From: "ConfigMap/extra key a"},
				},
				Mounts: []localweb.Mount{
					{
						Path: "/etc/welcome", Volume: "page", From: "ConfigMap/alice",
						Files: map[string][]byte{"sub/index.html": []byte(page)},
						Mode:  map[string]int32{"sub/index.html": 0o400},
					},
					{Path: "/tmp", Volume: "tmp", From: "emptyDir", Files: map[string][]byte{}, Mode: map[string]int32{}},
				},
				ReadinessPath: "/",
			},
		},
		"the password Secret is missing": {
			change: func(_ *appsv1.Deployment, _ *corev1.ConfigMap, s *corev1.Secret) []client.Object {
				s.Name = "other"
				return nil
			},
			wantErr: `env PASSWORD: container "web" of deployment demo/alice refers to Secret/alice-password: secrets "alice-password" not found`,
		},
		"the password key is missing": {
			change: func(_ *appsv1.Deployment, _ *corev1.ConfigMap, s *corev1.Secret) []client.Object {
				s.Data = map[string][]byte{"pass": []byte("x")}
				return nil
			},
			wantErr: `Secret/alice-password has no key "password" (the kubelet would not start the container)`,
		},
		"the page ConfigMap is missing": {
			change: func(_ *appsv1.Deployment, cm *corev1.ConfigMap, _ *corev1.Secret) []client.Object {
				cm.Name = "other"
				return nil
			},
			wantErr: `volume page: container "web" of deployment demo/alice refers to ConfigMap/alice: configmaps "alice" not found`,
		},
		"no web container": {
			change: func(d *appsv1.Deployment, _ *corev1.ConfigMap, _ *corev1.Secret) []client.Object {
				d.Spec.Template.Spec.Containers[0].Name = "server"
				return nil
			},
			wantErr: `deployment demo/alice has no container "web"`,
		},
		"a command": {
			change: func(d *appsv1.Deployment, _ *corev1.ConfigMap, _ *corev1.Secret) []client.Object {
				d.Spec.Template.Spec.Containers[0].Command = []string{"/bin/sh"}
				return nil
			},
			wantErr: "sets a command",
		},
		"$(VAR) expansion": {
			change: func(d *appsv1.Deployment, _ *corev1.ConfigMap, _ *corev1.Secret) []client.Object {
				d.Spec.Template.Spec.Containers[0].Env[0].Value = "$(USER)"
				return nil
			},
			wantErr: "env NAME: uses $(VAR) expansion",
		},
		"the downward API": {
			change: func(d *appsv1.Deployment, _ *corev1.ConfigMap, _ *corev1.Secret) []client.Object {
				c := &d.Spec.Template.Spec.Containers[0]
				c.Env = append(c.Env, corev1.EnvVar{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
				return nil
			},
			wantErr: "env POD comes from the downward API or a file",
		},
		"a sub-path mount": {
			change: func(d *appsv1.Deployment, _ *corev1.ConfigMap, _ *corev1.Secret) []client.Object {
				d.Spec.Template.Spec.Containers[0].VolumeMounts[0].SubPath = controller.PageKey
				return nil
			},
			wantErr: "sub-path mounts have no local stand-in",
		},
		"an item path leaving the mount": {
			change: func(d *appsv1.Deployment, _ *corev1.ConfigMap, _ *corev1.Secret) []client.Object {
				d.Spec.Template.Spec.Volumes[0].ConfigMap.Items = []corev1.KeyToPath{{Key: controller.PageKey, Path: "../page.html"}}
				return nil
			},
			wantErr: `item path "../page.html" leaves the mount`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cm, dep, secret := rendered(t, "Alice")
			objs := []client.Object{cm, secret}
			if tc.change != nil {
				objs = append(objs, tc.change(dep, cm, secret)...)
			}
			c := fake.NewClientBuilder().WithObjects(objs...).Build()
			got, err := localweb.Resolve(t.Context(), c, dep, localweb.ContainerName)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Resolve error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSite builds the web server, serves the page the operator rendered for Alice, follows a rollout
// that renames her, and checks what each server answers.
func TestSite(t *testing.T) {
	bin, err := localweb.Build(t.Context(), moduleRoot(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cm, dep, secret := rendered(t, "Alice")
	c := fake.NewClientBuilder().WithObjects(cm, dep, secret).Build()
	site := localweb.NewSite(c, types.NamespacedName{Namespace: "demo", Name: "alice"}, bin, localweb.WithPort(0), localweb.WithDir(t.TempDir()))
	t.Cleanup(func() {
		if err := site.Stop(); err != nil {
			t.Error(err)
		}
	})

	sync := func(wantStarted bool, wantReason string) {
		t.Helper()
		started, reason, err := site.Sync(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]any{wantStarted, wantReason}, []any{started, reason}); diff != "" {
			t.Fatalf("Sync (-want +got):\n%s", diff)
		}
	}
	sync(true, "")
	first := site.Process()
	body := get(t.Context(), t, first.URL, "")
	for _, want := range []string{"<h1>Hello Alice</h1>", "alice@example.com"} {
		if !strings.Contains(body, want) {
			t.Errorf("%s does not show %q:\n%s", first.URL, want, body)
		}
	}
	privateURL := strings.TrimSuffix(first.URL, "/hello/") + "/private/"
	if diff := cmp.Diff("Welcome back, Alice\n", get(t.Context(), t, privateURL, "s3cret")); diff != "" {
		t.Errorf("the private page with the Secret's password (-want +got):\n%s", diff)
	}
	wantRewrites := []string{
		"PAGE_FILE=/etc/welcome/page.html -> " + filepath.Join(first.Dir, "0-page", "page.html"),
		"PORT=8088 -> " + strings.TrimPrefix(strings.TrimSuffix(first.URL, "/hello/"), "http://localhost:") + " (the local port)",
	}
	if diff := cmp.Diff(wantRewrites, first.Rewrites); diff != "" {
		t.Errorf("Rewrites (-want +got):\n%s", diff)
	}
	sync(false, "the configuration has not changed")

	// The operator renders the new name and rolls the Deployment; until the rollout ends, nothing changes.
	cm2, dep2, _ := rendered(t, "Alice Liddell")
	cm.Data = cm2.Data
	if err := c.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(dep), dep); err != nil {
		t.Fatal(err)
	}
	dep.Spec = dep2.Spec
	if err := c.Update(t.Context(), dep); err != nil {
		t.Fatal(err)
	}
	dep.Status.UpdatedReplicas = 1
	if err := c.Status().Update(t.Context(), dep); err != nil {
		t.Fatal(err)
	}
	sync(false, "deployment demo/alice is rolling out: 1/2 replicas updated")
	dep.Status.UpdatedReplicas = 2
	if err := c.Status().Update(t.Context(), dep); err != nil {
		t.Fatal(err)
	}
	sync(true, "")
	second := site.Process()
	if diff := cmp.Diff(first.URL, second.URL); diff != "" {
		t.Errorf("the URL changed across the restart (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(first.Dir); !os.IsNotExist(err) {
		t.Errorf("the first server's directory %s is still there (%v)", first.Dir, err)
	}
	if body := get(t.Context(), t, second.URL, ""); !strings.Contains(body, "<h1>Hello Alice Liddell</h1>") {
		t.Errorf("after the rollout, %s does not greet Alice Liddell:\n%s", second.URL, body)
	}
}

// TestStartRewrites checks which values the local process gets changed: mount paths and paths below
// them (a nested mount winning), in the environment and the arguments, and nothing else.
func TestStartRewrites(t *testing.T) {
	bin, err := localweb.Build(t.Context(), moduleRoot(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := &localweb.Config{
		Deployment: types.NamespacedName{Namespace: "demo", Name: "alice"},
		Container:  "web",
		Args:       []string{"/etc/welcome/conf/x.yaml", "--page=/etc/welcome/page.html", "/etc/welcome/../passwd"},
		Env: []localweb.EnvVar{
			{Name: "NAME", Value: "Alice"},
			{Name: "PORT", Value: "0"},
			{Name: "PAGE_FILE", Value: "/etc/welcome//page.html"},
			{Name: "DIR", Value: "/etc/welcome"},
			{Name: "RELATIVE", Value: "etc/welcome/page.html"},
			{Name: "SECRET_PATH", Value: "/etc/welcome/conf", From: "Secret/s key k", Secret: true},
		},
		Mounts: []localweb.Mount{
			{Path: "/etc/welcome", Volume: "page", Files: map[string][]byte{"page.html": []byte("<p>page</p>")}},
			{Path: "/etc/welcome/conf", Volume: "conf", Files: map[string][]byte{"x.yaml": []byte("x: 1")}},
		},
		ReadinessPath: "/hello/",
	}
	p, err := localweb.Start(t.Context(), bin, cfg, localweb.WithPort(0), localweb.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	})
	page, conf := filepath.Join(p.Dir, "0-page"), filepath.Join(p.Dir, "1-conf")
	want := []string{
		"PAGE_FILE=/etc/welcome//page.html -> " + filepath.Join(page, "page.html"),
		"DIR=/etc/welcome -> " + page,
		"SECRET_PATH (from Secret/s key k, not shown): a mount path, rewritten to its local stand-in",
		"argument /etc/welcome/conf/x.yaml -> " + filepath.Join(conf, "x.yaml"),
		fmt.Sprintf("PORT=0 -> %d (the local port)", p.Port),
	}
	if diff := cmp.Diff(want, p.Rewrites); diff != "" {
		t.Errorf("Rewrites (-want +got):\n%s", diff)
	}
	for file, content := range map[string]string{filepath.Join(page, "page.html"): "<p>page</p>", filepath.Join(conf, "x.yaml"): "x: 1"} {
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(content, string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
	}
	if body := get(t.Context(), t, p.URL, ""); !strings.Contains(body, "<p>page</p>") {
		t.Errorf("%s does not show the page from the stand-in:\n%s", p.URL, body)
	}
}

func TestStartRefusesABusyPort(t *testing.T) {
	cm, dep, secret := rendered(t, "Alice")
	c := fake.NewClientBuilder().WithObjects(cm, secret).Build()
	cfg, err := localweb.Resolve(t.Context(), c, dep, localweb.ContainerName)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	_, err = localweb.Start(t.Context(), "/nonexistent", cfg, localweb.WithPort(ln.Addr().(*net.TCPAddr).Port), localweb.WithDir(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "is in use on this machine") {
		t.Fatalf("Start on a busy port: error = %v, want one saying the port is in use", err)
	}
}

// get returns the body of url (with basic auth when password is set), failing unless it answers 200.
func get(ctx context.Context, t *testing.T, url, password string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if password != "" {
		req.SetBasicAuth("alice", password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	return string(body)
}

// moduleRoot returns the repository root, three directories above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}
