package reconcile

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// richDeployment has fields of every shape the walk meets: maps, structs, keyed lists (ports keyed by
// port and a defaulted protocol, containers, env, volumes), a set (finalizers), atomic lists and
// structs (tolerations, the selector), an empty struct and quantities.
func richDeployment(image string, withSidecar bool) *appsv1.Deployment {
	sel := map[string]string{"app": "web"}
	containers := []corev1.Container{{
		Name: "web", Image: image, Args: []string{"--port=8080"},
		Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}},
		Env:             []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		Resources:       corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
		VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		SecurityContext: &corev1.SecurityContext{},
	}}
	if withSidecar {
		containers = append(containers, corev1.Container{Name: "proxy", Image: "proxy:2"})
	}
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: sel,
			Annotations: map[string]string{"example.com/note": "kept"}, Finalizers: []string{"a.example.com/x", "b.example.com/y"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("25%"))}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{
					Containers:  containers,
					Volumes:     []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
					Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				},
			},
		},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 2},
	}
}

func richService() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": "web"},
			ClusterIPs: []string{"10.0.0.1"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}},
		},
	}
}

func richUnstructured() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns", "labels": map[string]any{"a": "b"}},
		"spec": map[string]any{"size": int64(3), "empty": map[string]any{}, "items": []any{"x", "y"},
			"nested": map[string]any{"on": true, "ratio": 0.5, "none": nil}},
	}}
}

// TestExtractItemsIsStructuredMergeDiffs: for every set, extractItems returns exactly what
// structured-merge-diff's ExtractItems does: the object's own fields, their leaves, random subsets of
// them, fields of another object (absent here), and members that are non-empty maps (extracted with the
// whole set again).
func TestExtractItemsIsStructuredMergeDiffs(t *testing.T) {
	objects := []struct {
		name    string
		obj     client.Object
		foreign client.Object
		extra   []fieldpath.Path
	}{
		{"deployment", richDeployment("web:1", false), richDeployment("web:2", true), []fieldpath.Path{
			fieldpath.MakePathOrDie("metadata", "labels"),
			fieldpath.MakePathOrDie("spec", "template"),
			fieldpath.MakePathOrDie("spec", "template", "spec", "containers"),
			fieldpath.MakePathOrDie("spec", "selector"),
			fieldpath.MakePathOrDie("spec", "template", "spec", "containers", fieldpath.KeyByFields("name", "nope"), "image"),
			fieldpath.MakePathOrDie("spec", "template", "spec", "containers", fieldpath.KeyByFields("name", "web"), "ports",
				fieldpath.KeyByFields("containerPort", 8080, "protocol", "TCP"), "name"),
			fieldpath.MakePathOrDie("metadata", "finalizers", value.NewValueInterface("a.example.com/x")),
		}},
		{"service", richService(), &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: map[string]string{"x": "y"}},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 443}}}}, nil},
		{"configmap", &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Data: map[string]string{"a": "1", "b": ""}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, BinaryData: map[string][]byte{"z": []byte("z")}}, nil},
		{"unstructured", richUnstructured(), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget", "spec": map[string]any{"other": "x", "nested": map[string]any{"off": false}}}}, []fieldpath.Path{
			fieldpath.MakePathOrDie("spec", "nested"), fieldpath.MakePathOrDie("spec", "empty"),
		}},
	}
	for _, o := range objects {
		t.Run(o.name, func(t *testing.T) {
			tv, err := typedOf(o.obj, gvkOf(t, o.obj))
			if err != nil {
				t.Fatal(err)
			}
			own := fieldsOf(t, o.obj)
			foreign := fieldsOf(t, o.foreign)
			sets := map[string]*fieldpath.Set{
				"own": own, "own leaves": own.Leaves(), "foreign": foreign, "foreign leaves": foreign.Leaves(),
				"own and foreign": own.Union(foreign), "extra": fieldpath.NewSet(o.extra...),
				"own leaves and extra": own.Leaves().Union(fieldpath.NewSet(o.extra...)),
				"empty":                fieldpath.NewSet(),
			}
			all := paths(own.Union(foreign))
			rng := rand.New(rand.NewPCG(1, uint64(len(o.name))))
			for i := range 300 {
				var pick []fieldpath.Path
				for _, p := range all {
					if rng.IntN(3) == 0 {
						pick = append(pick, p)
					}
				}
				set := fieldpath.NewSet(pick...)
				if i%2 == 1 {
					set = set.Leaves()
				}
				sets["random "+string(rune('a'+i%26))+string(rune('a'+i/26))] = set
			}
			for name, set := range sets {
				want := tv.ExtractItems(set).AsValue().Unstructured()
				got := extractItems(tv, set)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("set %s:\n%s\nextractItems (-structured-merge-diff +got):\n%s", name, set, diff)
				}
			}
		})
	}
}

func gvkOf(t *testing.T, obj client.Object) schema.GroupVersionKind {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, clientgoscheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	return gvk
}

// fieldsOf returns every field obj sets, as the API server would record them were it applied whole.
func fieldsOf(t *testing.T, obj client.Object) *fieldpath.Set {
	t.Helper()
	tv, err := typedOf(obj, gvkOf(t, obj))
	if err != nil {
		t.Fatal(err)
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// paths lists the members of set (copies: Iterate reuses its path).
func paths(set *fieldpath.Set) []fieldpath.Path {
	var out []fieldpath.Path
	set.Iterate(func(p fieldpath.Path) { out = append(out, p.Copy()) })
	return out
}

// BenchmarkExtractItems compares the walk along the set with structured-merge-diff's walk of the
// whole object, for what a manager applied to a Deployment.
func BenchmarkExtractItems(b *testing.B) {
	obj := richDeployment("web:1", true)
	gvk, _ := apiutil.GVKForObject(obj, clientgoscheme.Scheme)
	tv, err := typedOf(obj, gvk)
	if err != nil {
		b.Fatal(err)
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		b.Fatal(err)
	}
	leaves := set.Leaves()
	b.Run("set walk", func(b *testing.B) {
		for b.Loop() {
			extractItems(tv, leaves)
		}
	})
	b.Run("structured-merge-diff", func(b *testing.B) {
		for b.Loop() {
			tv.ExtractItems(leaves).AsValue().Unstructured()
		}
	})
}
