package reliability

import (
	"fmt"
	"path/filepath"
	"runtime"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	memcachedv1 "github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	memcached "github.com/convergo-dev/convergo/examples/memcached/controller"
	welcomev1 "github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	welcome "github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/status"
)

// Operator describes one example operator for the suites: how to run it, what its objects look like
// and what a converged object owns.
type Operator struct {
	// Name is the example's name ("memcached", "welcome").
	Name string
	// Kind is the kind of the operator's objects ("Memcached", "Welcome").
	Kind string
	// Controller is the controller name: its field manager and the managed-by label of its children.
	Controller string
	// Finalizer is the finalizer the operator puts on its objects.
	Finalizer string
	// Setup registers the operator's controller with a manager.
	Setup func(mgr manager.Manager) error
	// New returns a valid object named name in namespace ns; i varies the spec between objects.
	New func(ns, name string, i int) status.Object
	// Change changes the spec of obj (an object from New, or read back), for update tests; i varies it.
	Change func(obj client.Object, i int)
	// NewList returns an empty list of the operator's objects.
	NewList func() client.ObjectList
	// Children are the kinds a converged object owns, one child of each kind, each with the kinds that
	// deletion must remove before it.
	Children []ChildKind
}

// ChildKind is one kind of child an operator creates.
type ChildKind struct {
	// Kind is the child's kind, e.g. "Deployment".
	Kind string
	// After names the kinds of the same owner that must be gone before this child is deleted (the
	// children that depend on it); the others may go in any order.
	After []string
	// NewList returns an empty typed list of the kind.
	NewList func() client.ObjectList
}

// Memcached is the memcached example operator: a Deployment of memcached pods, then a Service.
var Memcached = &Operator{
	Name:       "memcached",
	Kind:       "Memcached",
	Controller: memcached.Name,
	Finalizer:  "cache.convergo.dev/finalizer", // the Reconciler's default for the group
	Setup:      memcached.SetupWithManager,
	New: func(ns, name string, i int) status.Object {
		return &memcachedv1.Memcached{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       memcachedv1.MemcachedSpec{Size: int32(1 + i%2), CacheSizeMB: int32(16 + 8*(i%4))},
		}
	},
	Change: func(obj client.Object, i int) {
		mc := obj.(*memcachedv1.Memcached)
		mc.Spec.Size = int32(1 + (int(mc.Spec.Size)+i)%3)
		mc.Spec.MaxConnections = int32(256 + 64*(i%4))
	},
	NewList: func() client.ObjectList { return &memcachedv1.MemcachedList{} },
	Children: []ChildKind{
		{Kind: "Service", NewList: func() client.ObjectList { return &corev1.ServiceList{} }},
		{Kind: "Deployment", After: []string{"Service"}, NewList: func() client.ObjectList { return &appsv1.DeploymentList{} }},
	},
}

// Welcome is the welcome example operator: the page ConfigMap and the Service, then the Deployment
// serving the page; deletion removes the Deployment, then the page and the Service.
var Welcome = &Operator{
	Name:       "welcome",
	Kind:       "Welcome",
	Controller: welcome.Name,
	Finalizer:  welcome.Finalizer,
	Setup:      welcome.SetupWithManager,
	New: func(ns, name string, i int) status.Object {
		return &welcomev1.Welcome{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: welcomev1.WelcomeSpec{
				Name:     fmt.Sprintf("User %d", i),
				Replicas: ptr.To(int32(1 + i%2)),
				Groups:   []string{"users", fmt.Sprintf("team-%d", i%3)},
				Email:    fmt.Sprintf("user%d@example.com", i),
			},
		}
	},
	Change: func(obj client.Object, i int) {
		w := obj.(*welcomev1.Welcome)
		w.Spec.Name = fmt.Sprintf("Changed user %d", i)
		w.Spec.Replicas = ptr.To(int32(1 + (i+1)%2))
	},
	NewList: func() client.ObjectList { return &welcomev1.WelcomeList{} },
	Children: []ChildKind{
		{Kind: "Deployment", NewList: func() client.ObjectList { return &appsv1.DeploymentList{} }},
		{Kind: "Service", NewList: func() client.ObjectList { return &corev1.ServiceList{} }},
		{Kind: "ConfigMap", After: []string{"Deployment"}, NewList: func() client.ObjectList { return &corev1.ConfigMapList{} }},
	},
}

// Operators are both example operators.
var Operators = []*Operator{Memcached, Welcome}

// SchemeAdders add both examples' API types to a scheme (for harness.WithSchemeAdders).
var SchemeAdders = []func(*kruntime.Scheme) error{memcachedv1.AddToScheme, welcomev1.AddToScheme}

// repoRoot returns the module's root directory, derived from this file's location.
func repoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// ExampleDir returns the absolute path of an example's directory, e.g. ExampleDir("memcached").
func ExampleDir(name string) string {
	return filepath.Join(repoRoot(), "examples", name)
}

// CRDDir returns the directory of the operator's generated CRDs.
func (o *Operator) CRDDir() string {
	return filepath.Join(ExampleDir(o.Name), "config", "crd", "bases")
}

// RolePath returns the path of the operator's ClusterRole generated from its RBAC markers.
func (o *Operator) RolePath() string {
	return filepath.Join(ExampleDir(o.Name), "config", "rbac", "role.yaml")
}

// CRDDirs returns the CRD directories of both examples (for harness.WithCRDPaths).
func CRDDirs() []string {
	out := make([]string, 0, len(Operators))
	for _, o := range Operators {
		out = append(out, o.CRDDir())
	}
	return out
}
