//go:build integration

package dryrun

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/internal/reliability"
	memcachedv1 "github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	memcached "github.com/convergo-dev/convergo/examples/memcached/controller"
	welcomev1 "github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	welcome "github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts a kube-apiserver and etcd (plain mode) with both examples' CRDs.
func TestMain(m *testing.M) {
	harness.Main(m,
		harness.WithCRDPaths(reliability.CRDDirs()...),
		harness.WithSchemeAdders(reliability.SchemeAdders...),
	)
}

// seeds is the size of each fuzz target's seed corpus, which go test runs every time.
const seeds = 150

// figures counts what a fuzz target tried.
type figures struct {
	specs, stalled, objects, pods, panics atomic.Int64
}

func (f *figures) String() string {
	return fmt.Sprintf("%d schema-valid specs; %d reported invalid by the operator (Stalled); %d children and %d pods accepted by server-side dry-run; %d panics",
		f.specs.Load(), f.stalled.Load(), f.objects.Load(), f.pods.Load(), f.panics.Load())
}

// target is what differs between the two examples' fuzz targets.
type target struct {
	op *reliability.Operator
	// object draws a random object of the example in ns.
	object func(g gen, ns string) status.Object
	// children builds the object's graph the way the operator does.
	children func(ctx context.Context, g gen, obj status.Object) (*graph.Graph, error)
}

var memcachedTarget = target{
	op: reliability.Memcached,
	object: func(g gen, ns string) status.Object {
		return &memcachedv1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: g.objectName()}, Spec: g.memcachedSpec()}
	},
	children: func(ctx context.Context, _ gen, obj status.Object) (*graph.Graph, error) {
		return memcached.Children(ctx, obj.(*memcachedv1.Memcached))
	},
}

var welcomeTarget = target{
	op: reliability.Welcome,
	object: func(g gen, ns string) status.Object {
		return &welcomev1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: g.objectName()}, Spec: g.welcomeSpec()}
	},
	children: func(_ context.Context, g gen, obj status.Object) (*graph.Graph, error) {
		w := obj.(*welcomev1.Welcome)
		var password *metav1.PartialObjectMetadata
		if ref := w.Spec.PasswordSecretRef; ref != nil {
			// What the operator reads from its metadata-only Secret cache.
			password = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
				Namespace: w.Namespace, Name: ref.Name, ResourceVersion: g.resourceVersion(),
			}}
		}
		return welcome.Children(w, password)
	},
}

// FuzzMemcachedChildren: random schema-valid Memcached specs through Children never panic, and every
// object built is accepted by the API server (server-side dry-run) unless Children reports the spec
// invalid; every pod template is admitted as restricted.
func FuzzMemcachedChildren(f *testing.F) { fuzz(f, memcachedTarget) }

// FuzzWelcomeChildren is FuzzMemcachedChildren for Welcome.
func FuzzWelcomeChildren(f *testing.F) { fuzz(f, welcomeTarget) }

// restricted holds one namespace enforcing the restricted Pod Security Standard per process (fuzz
// workers are separate processes, each with its own API server).
var restricted struct {
	once sync.Once
	name string
	err  error
}

func restrictedNamespace(env *harness.Env) (string, error) {
	restricted.once.Do(func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "dryrun-", Labels: map[string]string{
			"pod-security.kubernetes.io/enforce":         "restricted",
			"pod-security.kubernetes.io/enforce-version": "latest",
		}}}
		restricted.err = env.Client.Create(context.Background(), ns)
		restricted.name = ns.Name
	})
	return restricted.name, restricted.err
}

func fuzz(f *testing.F, tg target) {
	for i := range uint64(seeds) {
		f.Add(i)
	}
	env := harness.Default()
	ns, err := restrictedNamespace(env)
	if err != nil {
		f.Fatalf("create restricted namespace: %v", err)
	}
	dry := client.NewDryRunClient(env.Client)
	applier := apply.NewApplier(dry, dry, apply.WithFieldManager(tg.op.Controller))
	var fig figures
	f.Cleanup(func() { f.Logf("FIGURES fuzz %s: %s", tg.op.Name, &fig) })

	f.Fuzz(func(t *testing.T, seed uint64) {
		g := newGen(seed)
		obj := tg.object(g, ns)
		// The object as the operator would see it: accepted, defaulted, with a UID.
		if err := dry.Create(t.Context(), obj, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
			t.Fatalf("generator bug: seed %d drew a spec the schema refuses: %v\n%s", seed, err, harness.ObjectYAML(obj))
		}
		fig.specs.Add(1)
		graph, err := build(t.Context(), tg, g, obj, &fig)
		var invalid *reconcile.InvalidSpecError
		switch {
		case errors.As(err, &invalid):
			fig.stalled.Add(1)
			return
		case err != nil:
			t.Fatalf("seed %d: Children failed without an InvalidSpecError (the operator would retry forever): %v\n%s", seed, err, harness.ObjectYAML(obj))
		}
		if err := graph.Validate(); err != nil {
			t.Fatalf("seed %d: invalid graph: %v", seed, err)
		}
		for _, n := range graph.Nodes() {
			if _, _, err := applier.Apply(t.Context(), obj, n.Object()); err != nil {
				t.Errorf("seed %d: the API server refuses child %q: %v\nspec:\n%s", seed, n.Name(), err, harness.ObjectYAML(obj))
				continue
			}
			fig.objects.Add(1)
			d, ok := n.Object().(*appsv1.Deployment)
			if !ok {
				continue
			}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.Name + "-pod", Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations},
				Spec:       d.Spec.Template.Spec,
			}
			if err := dry.Create(t.Context(), pod); err != nil {
				t.Errorf("seed %d: a pod from the Deployment's template is refused (restricted namespace): %v\nspec:\n%s", seed, err, harness.ObjectYAML(obj))
				continue
			}
			fig.pods.Add(1)
		}
	})
}

// build calls the target's Children and turns a panic into a test failure that names the input.
func build(ctx context.Context, tg target, g gen, obj status.Object, fig *figures) (graph *graph.Graph, err error) {
	defer func() {
		if r := recover(); r != nil {
			fig.panics.Add(1)
			err = fmt.Errorf("panic in Children: %v\n%s\n%s", r, debug.Stack(), harness.ObjectYAML(obj))
		}
	}()
	return tg.children(ctx, g, obj)
}
