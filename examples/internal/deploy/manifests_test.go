package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ids lists objectID of each object.
func ids(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = objectID(o)
	}
	return out
}

// TestLoadExamples renders both examples' config/default as kustomize would: every object once, in
// install order, the operator's image set by the images transformer of config/manager.
func TestLoadExamples(t *testing.T) {
	for _, ex := range []string{"memcached", "welcome"} {
		t.Run(ex, func(t *testing.T) {
			ns := ex + "-system"
			objs, err := Load(filepath.Join("..", "..", ex, "config", "default"))
			if err != nil {
				t.Fatal(err)
			}
			crd := map[string]string{"memcached": "memcacheds.cache.convergo.dev", "welcome": "welcomes.web.convergo.dev"}[ex]
			want := []string{
				"Namespace/" + ns,
				"CustomResourceDefinition.apiextensions.k8s.io/" + crd,
				"ServiceAccount/" + ns + "/" + ex + "-controller-manager",
				"Role.rbac.authorization.k8s.io/" + ns + "/" + ex + "-leader-election-role",
				"ClusterRole.rbac.authorization.k8s.io/" + ex + "-manager-role",
				"ClusterRole.rbac.authorization.k8s.io/" + ex + "-metrics-auth-role",
				"ClusterRole.rbac.authorization.k8s.io/" + ex + "-metrics-reader",
				"RoleBinding.rbac.authorization.k8s.io/" + ns + "/" + ex + "-leader-election-rolebinding",
				"ClusterRoleBinding.rbac.authorization.k8s.io/" + ex + "-manager-rolebinding",
				"ClusterRoleBinding.rbac.authorization.k8s.io/" + ex + "-metrics-auth-rolebinding",
				"Service/" + ns + "/" + ex + "-controller-manager-metrics-service",
				"Deployment.apps/" + ns + "/" + ex + "-controller-manager",
			}
			if ex == "welcome" { // kinds kustomize does not order come last
				want = append(want,
					"MutatingAdmissionPolicy.admissionregistration.k8s.io/finalizer.web.convergo.dev.finalizer",
					"MutatingAdmissionPolicyBinding.admissionregistration.k8s.io/finalizer.web.convergo.dev.finalizer")
			}
			if diff := cmp.Diff(want, ids(objs)); diff != "" {
				t.Errorf("objects of config/default (-want +got):\n%s", diff)
			}

			op, err := LoadOperator(filepath.Join("..", "..", ex), "")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{
				"namespace":      op.Namespace,
				"serviceAccount": op.ServiceAccount,
				"user":           op.UserName(),
				"image":          op.Deployment.Spec.Template.Spec.Containers[0].Image,
				"crd":            op.CRDs[0].Name,
			}
			wantOp := map[string]string{
				"namespace":      ns,
				"serviceAccount": ex + "-controller-manager",
				"user":           "system:serviceaccount:" + ns + ":" + ex + "-controller-manager",
				"image":          "ghcr.io/convergo-dev/" + ex + "-operator:v0.1.0",
				"crd":            crd,
			}
			if diff := cmp.Diff(wantOp, got); diff != "" {
				t.Errorf("operator (-want +got):\n%s", diff)
			}
		})
	}
}

// writeTree writes files (path: content) under a new temporary directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for path, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: op
  namespace: ns
spec:
  selector:
    matchLabels: {app: op}
  template:
    metadata:
      labels: {app: op}
    spec:
      serviceAccountName: op
      initContainers:
      - name: init
        image: controller:latest
      containers:
      - name: manager
        image: controller:latest
      - name: sidecar
        image: registry.example:5000/sidecar:1.0
`

func TestLoad(t *testing.T) {
	cases := map[string]struct {
		files   map[string]string
		want    []string // objectIDs
		images  []string // images of the Deployment's init containers and containers
		wantErr string
	}{
		"images of a parent apply to a child's objects too": {
			files: map[string]string{
				"default/kustomization.yaml": "resources:\n- ../manager\n- ns.yaml\nimages:\n- name: registry.example:5000/sidecar\n  digest: sha256:abc\n",
				"default/ns.yaml":            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n",
				"manager/kustomization.yaml": "resources:\n- deployment.yaml\nimages:\n- name: controller\n  newName: example.com/op\n  newTag: v1\n",
				"manager/deployment.yaml":    deploymentYAML,
			},
			want:   []string{"Namespace/ns", "Deployment.apps/ns/op"},
			images: []string{"example.com/op:v1", "example.com/op:v1", "registry.example:5000/sidecar@sha256:abc"},
		},
		"an image entry without a tag keeps the tag": {
			files: map[string]string{
				"default/kustomization.yaml": "resources:\n- deployment.yaml\nimages:\n- name: controller\n  newName: example.com/op\n",
				"default/deployment.yaml":    deploymentYAML,
			},
			want:   []string{"Deployment.apps/ns/op"},
			images: []string{"example.com/op:latest", "example.com/op:latest", "registry.example:5000/sidecar:1.0"},
		},
		"empty documents and separators are skipped": {
			files: map[string]string{
				"default/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- objs.yaml\n",
				"default/objs.yaml":          "---\n# a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: ns\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n",
			},
			want: []string{"Namespace/ns", "ConfigMap/ns/b"},
		},
		"a patch is refused": {
			files: map[string]string{
				"default/kustomization.yaml": "resources:\n- ns.yaml\npatches:\n- path: p.yaml\n",
				"default/ns.yaml":            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n",
			},
			wantErr: "render this tree with kubectl apply -k",
		},
		"a remote resource is refused": {
			files:   map[string]string{"default/kustomization.yaml": "resources:\n- https://example.com/x.yaml\n"},
			wantErr: "remote resource",
		},
		"a missing resource": {
			files:   map[string]string{"default/kustomization.yaml": "resources:\n- missing.yaml\n"},
			wantErr: "resource missing.yaml",
		},
		"no resources": {
			files:   map[string]string{"default/kustomization.yaml": "images: []\n"},
			wantErr: "lists no resources",
		},
		"a cycle": {
			files: map[string]string{
				"default/kustomization.yaml": "resources:\n- ../other\n",
				"other/kustomization.yaml":   "resources:\n- ../default\n",
			},
			wantErr: "include each other",
		},
		"the same object twice": {
			files: map[string]string{
				"default/kustomization.yaml": "resources:\n- a.yaml\n- b.yaml\n",
				"default/a.yaml":             "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n",
				"default/b.yaml":             "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n",
			},
			wantErr: "Namespace/ns appears twice",
		},
		"a document without a name": {
			files: map[string]string{
				"default/kustomization.yaml": "resources:\n- a.yaml\n",
				"default/a.yaml":             "apiVersion: v1\nkind: Namespace\n",
			},
			wantErr: "lacks apiVersion, kind or metadata.name",
		},
		"newTag and digest together": {
			files: map[string]string{
				"default/kustomization.yaml": "resources:\n- deployment.yaml\nimages:\n- name: controller\n  newTag: v1\n  digest: sha256:abc\n",
				"default/deployment.yaml":    deploymentYAML,
			},
			wantErr: "both newTag and digest",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := writeTree(t, tc.files)
			objs, err := Load(filepath.Join(dir, "default"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(objs)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			if tc.images == nil {
				return
			}
			var images []string
			for _, o := range objs {
				for _, field := range []string{"initContainers", "containers"} {
					cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", field)
					for _, c := range cs {
						images = append(images, c.(map[string]any)["image"].(string))
					}
				}
			}
			if diff := cmp.Diff(tc.images, images); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImageName(t *testing.T) {
	cases := map[string]string{
		"controller":                            "controller",
		"controller:latest":                     "controller",
		"registry.example:5000/op":              "registry.example:5000/op",
		"registry.example:5000/op:v1":           "registry.example:5000/op",
		"example.com/op@sha256:abc":             "example.com/op",
		"registry.example:5000/op:v1@sha256:ab": "registry.example:5000/op",
	}
	for ref, want := range cases {
		if got := imageName(ref); got != want {
			t.Errorf("imageName(%q) = %q, want %q", ref, got, want)
		}
	}
}

func TestLoadOperatorErrors(t *testing.T) {
	ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n"
	sa := "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: op\n  namespace: ns\n"
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n"
	cases := map[string]struct {
		objects string
		wantErr string
	}{
		"no deployment":          {objects: ns + "---\n" + sa + "---\n" + crd, wantErr: "holds no Deployment"},
		"no crd":                 {objects: ns + "---\n" + sa + "---\n" + deploymentYAML, wantErr: "holds no CustomResourceDefinition"},
		"no service account":     {objects: ns + "---\n" + crd + "---\n" + deploymentYAML, wantErr: "has no ServiceAccount ns/op"},
		"an unknown field":       {objects: sa + "---\n" + crd + "---\n" + deploymentYAML + "  replicaz: 1\n", wantErr: "replicaz"},
		"an image for two":       {objects: sa + "---\n" + crd + "---\n" + deploymentYAML, wantErr: "only a single container's"},
		"two deployments":        {objects: sa + "---\n" + crd + "---\n" + deploymentYAML + "---\n" + strings.Replace(deploymentYAML, "name: op\n", "name: op2\n", 1), wantErr: "holds Deployments"},
		"deployment without one": {objects: sa + "---\n" + crd + "---\n" + strings.Replace(deploymentYAML, "      serviceAccountName: op\n", "", 1), wantErr: "needs a namespace and a serviceAccountName"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"op/config/default/kustomization.yaml": "resources:\n- objs.yaml\n",
				"op/config/default/objs.yaml":          tc.objects,
			})
			_, err := LoadOperator(filepath.Join(dir, "op"), "example.com/op:v2")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("LoadOperator error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestLoadOperatorImage replaces the operator's image in the object that is applied, not only in the
// typed copy.
func TestLoadOperatorImage(t *testing.T) {
	op, err := LoadOperator(filepath.Join("..", "..", "welcome"), "registry.example/welcome-operator:dev")
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, o := range op.Objects {
		if o.GetKind() == "Deployment" {
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range cs {
				images = append(images, c.(map[string]any)["image"].(string))
			}
		}
	}
	images = append(images, op.Deployment.Spec.Template.Spec.Containers[0].Image)
	if diff := cmp.Diff([]string{"registry.example/welcome-operator:dev", "registry.example/welcome-operator:dev"}, images); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
}
