//go:build integration

package expert

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/convergo-dev/convergo/bench/baseline"
	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/testing/harness"
)

// TestMain starts a real kube-apiserver and etcd (plain mode: no controller-manager, so the tests play
// the Deployment controller) with the Welcome CRD installed.
func TestMain(m *testing.M) {
	harness.Main(m,
		harness.WithCRDPaths("../../examples/welcome/config/crd/bases"),
		harness.WithSchemeAdders(v1alpha1.AddToScheme),
	)
}

const waitTimeout = 60 * time.Second

// fullSpec returns a spec with every field set, the defaults filled in as the CRD's would be.
func fullSpec() v1alpha1.WelcomeSpec {
	return v1alpha1.WelcomeSpec{
		Name: "Bob", Image: v1alpha1.DefaultImage, Replicas: ptr.To[int32](2), Port: 9090,
		ServiceType: corev1.ServiceTypeNodePort, NodePort: ptr.To[int32](30080), UserID: ptr.To[int64](2000),
		Groups: []string{"ops", "web"}, Email: "bob@example.com",
		PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "bob-password", Key: "password"},
	}
}

// defaultSpec returns the spec of a Welcome created with only a name, after the CRD's defaults.
func defaultSpec() v1alpha1.WelcomeSpec {
	return v1alpha1.WelcomeSpec{
		Name: "Alice", Image: v1alpha1.DefaultImage, Replicas: ptr.To[int32](1), Port: 8088,
		ServiceType: corev1.ServiceTypeClusterIP,
	}
}

// TestSameChildrenAsBaseline checks that the expert makes the same children as the baseline, so that
// the bench compares the same job: for each spec, the ConfigMap data, the Deployment spec and the
// Service spec a first pass creates are equal, and so are the labels but for managed-by.
func TestSameChildrenAsBaseline(t *testing.T) {
	nodePortUnpinned := defaultSpec()
	nodePortUnpinned.ServiceType = corev1.ServiceTypeNodePort
	cases := map[string]v1alpha1.WelcomeSpec{
		"defaults":           defaultSpec(),
		"every field":        fullSpec(),
		"node port unpinned": nodePortUnpinned,
		"user ID, no password": {
			Name: "Carol", Image: "example.com/web:1", Replicas: ptr.To[int32](3), Port: 80,
			ServiceType: corev1.ServiceTypeClusterIP, UserID: ptr.To[int64](1000), Groups: []string{"dev"},
		},
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			want := childrenOf(t, spec, func(c client.Client, s *runtime.Scheme) reconcileFunc {
				return (&baseline.Reconciler{Client: c, Scheme: s}).Reconcile
			})
			for _, ssa := range []bool{false, true} {
				got := childrenOf(t, spec, func(c client.Client, s *runtime.Scheme) reconcileFunc {
					return (&Reconciler{Client: c, Scheme: s, ServerSideApply: ssa}).Reconcile
				})
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("children, ServerSideApply %v (-baseline +expert):\n%s", ssa, diff)
				}
			}
		})
	}
}

type reconcileFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

// children is what TestSameChildrenAsBaseline compares.
type children struct {
	Labels     []map[string]string
	Page       map[string]string
	Deployment appsv1.DeploymentSpec
	Service    corev1.ServiceSpec
}

// childrenOf runs one pass of a reconciler on a fake client holding a Welcome with spec and returns
// its children, without the managed-by label.
func childrenOf(t *testing.T, spec v1alpha1.WelcomeSpec, newReconciler func(client.Client, *runtime.Scheme) reconcileFunc) children {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	w := &v1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: types.UID("uid")}, Spec: spec}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(w).WithStatusSubresource(w).Build()
	key := client.ObjectKeyFromObject(w)
	if _, err := newReconciler(c, scheme)(t.Context(), ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	var (
		cm  corev1.ConfigMap
		dep appsv1.Deployment
		svc corev1.Service
	)
	for _, obj := range []client.Object{&cm, &dep, &svc} {
		if err := c.Get(t.Context(), key, obj); err != nil {
			t.Fatalf("get %T: %v", obj, err)
		}
	}
	var out children
	for _, labels := range []map[string]string{cm.Labels, dep.Labels, dep.Spec.Template.Labels, svc.Labels} {
		delete(labels, "app.kubernetes.io/managed-by")
		out.Labels = append(out.Labels, labels)
	}
	dep.Spec.Template.Labels = nil
	out.Page, out.Deployment, out.Service = cm.Data, dep.Spec, svc.Spec
	return out
}

// TestCacheLag checks that a child the cache does not show yet, which the API server answers
// AlreadyExists to, makes the reconciler try again later without an error (which would be logged
// and retried at once) and without writing the status.
func TestCacheLag(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	w := &v1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: types.UID("uid")}, Spec: defaultSpec()}
	existing := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns"}}
	statusPatches := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(w, existing).WithStatusSubresource(w).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.Service); ok {
					return apierrors.NewNotFound(corev1.Resource("services"), key.Name) // the cache lags
				}
				return c.Get(ctx, key, obj, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				statusPatches++
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	r := &Reconciler{Client: c, Scheme: scheme}
	res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
	got := []any{res, err, statusPatches}
	want := []any{ctrl.Result{RequeueAfter: cacheLagRetry}, nil, 0}
	if diff := cmp.Diff(want, got, cmpopts.EquateErrors()); diff != "" {
		t.Errorf("reconcile with a lagging cache (-want +got):\n%s", diff)
	}
}

// TestRolledOut checks the Ready condition's rule, that of `kubectl rollout status`.
func TestRolledOut(t *testing.T) {
	type want struct {
		Done    bool
		Reason  string
		Message string
	}
	deployment := func(generation int64, replicas int32, st appsv1.DeploymentStatus) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: generation},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
			Status:     st,
		}
	}
	cases := map[string]struct {
		dep  *appsv1.Deployment
		want want
	}{
		"just created": {
			dep:  deployment(1, 1, appsv1.DeploymentStatus{}),
			want: want{false, ReasonProgressing, "waiting for the deployment controller to observe the new spec"},
		},
		"rolled out": {
			dep:  deployment(2, 2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}),
			want: want{true, ReasonAvailable, "the site is available"},
		},
		"new spec not observed": {
			dep:  deployment(3, 2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}),
			want: want{false, ReasonProgressing, "waiting for the deployment controller to observe the new spec"},
		},
		"scaling up": {
			dep:  deployment(2, 2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}),
			want: want{false, ReasonProgressing, "1/2 replicas updated"},
		},
		"old replica left": {
			dep:  deployment(2, 1, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2}),
			want: want{false, ReasonProgressing, "1 old replicas pending termination"},
		},
		"updated replica not available": {
			dep:  deployment(2, 2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1}),
			want: want{false, ReasonProgressing, "1/2 updated replicas available"},
		},
		"scaled to zero": {
			dep:  deployment(2, 0, appsv1.DeploymentStatus{ObservedGeneration: 2}),
			want: want{true, ReasonAvailable, "the site is available"},
		},
		"progress deadline exceeded": {
			dep: deployment(2, 1, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "too slow",
			}}}),
			want: want{false, ReasonProgressDeadlineExceeded, "too slow"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got want
			got.Done, got.Reason, got.Message = rolledOut(tc.dep)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rolledOut (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCacheOptions checks that the cache drops managedFields and still runs a transform set before.
func TestCacheOptions(t *testing.T) {
	cases := map[string]struct {
		before    toolscache.TransformFunc
		wantNotes string
	}{
		"no transform before": {},
		"a transform before": {
			before: func(in any) (any, error) {
				obj := in.(*corev1.ConfigMap)
				// It runs after the stripping: it sees no managedFields.
				obj.Annotations = map[string]string{"note": fmt.Sprintf("%d managed fields", len(obj.ManagedFields))}
				return obj, nil
			},
			wantNotes: "0 managed fields",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			opts := cache.Options{DefaultTransform: tc.before}
			CacheOptions(&opts)
			in := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "page", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "someone"}}}}
			out, err := opts.DefaultTransform(in)
			if err != nil {
				t.Fatal(err)
			}
			cm := out.(*corev1.ConfigMap)
			got := []any{len(cm.ManagedFields), cm.Annotations["note"]}
			if diff := cmp.Diff([]any{0, tc.wantNotes}, got); diff != "" {
				t.Errorf("transformed (-want +got):\n%s", diff)
			}
		})
	}
}

// startExpert starts a manager running the expert with its cache options; its requests go through
// cfg (the environment's admin config when nil).
func startExpert(t *testing.T, env *harness.Env, cfg *rest.Config, opts ...func(*Reconciler)) {
	t.Helper()
	mopts := []harness.ManagerOption{harness.WithManagerOptions(func(o *manager.Options) { CacheOptions(&o.Cache) })}
	if cfg != nil {
		mopts = append(mopts, harness.WithManagerConfig(cfg))
	}
	env.StartManager(t, func(mgr manager.Manager) error {
		r := &Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
		for _, opt := range opts {
			opt(r)
		}
		return r.SetupWithManager(mgr)
	}, mopts...)
}

func createWelcome(t *testing.T, env *harness.Env, ns, name string, spec v1alpha1.WelcomeSpec) *v1alpha1.Welcome {
	t.Helper()
	w := &v1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
	if err := env.Client.Create(t.Context(), w); err != nil {
		t.Fatalf("create welcome %s: %v", name, err)
	}
	return w
}

// readyIs returns a WaitForObject condition: the Welcome's status describes its current generation
// and its Ready condition has status s for that generation.
func readyIs(s metav1.ConditionStatus) func(*v1alpha1.Welcome) bool {
	return func(w *v1alpha1.Welcome) bool {
		c := meta.FindStatusCondition(w.Status.Conditions, ConditionReady)
		return w.Status.ObservedGeneration == w.Generation && c != nil && c.Status == s && c.ObservedGeneration == w.Generation
	}
}

// markRolledOut plays the Deployment controller (absent in plain mode): it writes the status of a
// Deployment whose every desired replica runs the current template and is available.
func markRolledOut(t *testing.T, c client.Client, key client.ObjectKey) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var d appsv1.Deployment
		if err := c.Get(ctx, key, &d); err != nil {
			return err
		}
		n := ptr.Deref(d.Spec.Replicas, 1)
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
				LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
			}},
		}
		return c.Status().Update(ctx, &d)
	})
	if err != nil {
		t.Fatalf("mark deployment %s rolled out: %v", key, err)
	}
}

// controllerOf returns "Kind/name blockOwnerDeletion=<bool>" of obj's controller reference, "" when
// it has none.
func controllerOf(obj client.Object) string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return ""
	}
	return fmt.Sprintf("%s/%s blockOwnerDeletion=%v", ref.Kind, ref.Name, ptr.Deref(ref.BlockOwnerDeletion, false))
}

// TestConverges checks on the real API server that a Welcome converges: its three children exist,
// controlled by it and labelled; its status is filled and Ready=False until the Deployment has
// rolled out, then Ready=True; no finalizer is added and no event is emitted.
func TestConverges(t *testing.T) {
	env := harness.Default()
	startExpert(t, env, nil)

	cases := map[string]struct {
		spec       v1alpha1.WelcomeSpec
		wantStatus func(ns string) v1alpha1.WelcomeStatus
	}{
		"only a name": {
			spec: v1alpha1.WelcomeSpec{Name: "Alice", Email: "alice@example.com"},
			wantStatus: func(ns string) v1alpha1.WelcomeStatus {
				return v1alpha1.WelcomeStatus{ReadyReplicas: 1, ServiceURL: "http://site." + ns + ".svc:8088/hello/"}
			},
		},
		"pinned node port": {
			spec: v1alpha1.WelcomeSpec{
				Name: "Bob", Replicas: ptr.To[int32](2), Port: 9090, ServiceType: corev1.ServiceTypeNodePort,
				NodePort: ptr.To[int32](30080), UserID: ptr.To[int64](2000), Groups: []string{"ops"},
				PasswordSecretRef: &v1alpha1.SecretKeyRef{Name: "bob-password", Key: "password"},
			},
			wantStatus: func(ns string) v1alpha1.WelcomeStatus {
				return v1alpha1.WelcomeStatus{
					ReadyReplicas: 2, ServiceURL: "http://site." + ns + ".svc:9090/hello/",
					NodePort: 30080, NodePortURL: "http://<node-ip>:30080/hello/",
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			w := createWelcome(t, env, ns, "site", tc.spec)
			key := client.ObjectKeyFromObject(w)
			t.Cleanup(func() {
				// Plain mode has no garbage collector: free the pinned node port for a next run (-count)
				// by deleting the Welcome (so that the expert does not recreate the Service), then the
				// Service.
				ctx := context.WithoutCancel(t.Context())
				for _, obj := range []client.Object{w, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}} {
					if err := env.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
						t.Errorf("delete %T: %v", obj, err)
					}
					harness.WaitForDeletion(t, env.Client, obj, waitTimeout)
				}
			})

			harness.WaitForObject(t, env.Client, key, w, waitTimeout, readyIs(metav1.ConditionFalse))
			if got, want := meta.FindStatusCondition(w.Status.Conditions, ConditionReady).Reason, ReasonProgressing; got != want {
				t.Errorf("Ready reason before the rollout = %q, want %q", got, want)
			}
			children := map[string]client.Object{"configmap": &corev1.ConfigMap{}, "deployment": &appsv1.Deployment{}, "service": &corev1.Service{}}
			for kind, obj := range children {
				if err := env.Client.Get(t.Context(), key, obj); err != nil {
					t.Fatalf("get %s: %v", kind, err)
				}
				got := []string{controllerOf(obj), obj.GetLabels()["app.kubernetes.io/managed-by"], obj.GetLabels()["app.kubernetes.io/instance"]}
				want := []string{"Welcome/site blockOwnerDeletion=true", ControllerName, "site"}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s owner and labels (-want +got):\n%s", kind, diff)
				}
			}

			markRolledOut(t, env.Client, key)
			harness.WaitForObject(t, env.Client, key, w, waitTimeout, readyIs(metav1.ConditionTrue))
			ready := meta.FindStatusCondition(w.Status.Conditions, ConditionReady)
			got := w.Status
			got.Conditions = nil
			want := tc.wantStatus(ns)
			want.ObservedGeneration = w.Generation
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{ReasonAvailable, "the site is available"}, []string{ready.Reason, ready.Message}); diff != "" {
				t.Errorf("Ready condition (-want +got):\n%s", diff)
			}
			if len(w.Finalizers) != 0 {
				t.Errorf("finalizers = %q, want none", w.Finalizers)
			}
			var events corev1.EventList
			if err := env.Client.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			// Only events about the Welcome count: kube-apiserver's own repair loops may report on
			// a child (ClusterIPNotAllocated when a Service's IP is checked mid-allocation).
			var ours []corev1.Event
			for _, e := range events.Items {
				if e.InvolvedObject.Kind == "Welcome" {
					ours = append(ours, e)
				}
			}
			if len(ours) != 0 {
				t.Errorf("%d events about the Welcome, want none: %v", len(ours), ours)
			}
		})
	}
}

// reconcileCount returns how many reconciles the expert controller finished so far in this process
// (controller-runtime's controller_runtime_reconcile_total, all results).
func reconcileCount(t *testing.T) int {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	total := 0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == ControllerName {
					total += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return total
}

// waitForReconciles waits until the expert has finished at least n reconciles.
func waitForReconciles(t *testing.T, n int) {
	t.Helper()
	harness.Eventually(t, waitTimeout, func() (bool, string) {
		got := reconcileCount(t)
		return got >= n, fmt.Sprintf("%d reconciles finished, want %d", got, n)
	})
}

// waitQuiet waits until the requests counter records have not grown for a second.
func waitQuiet(t *testing.T, counter *harness.RequestCounter) {
	t.Helper()
	last, since := len(counter.Snapshot()), time.Now()
	harness.Eventually(t, waitTimeout, func() (bool, string) {
		if n := len(counter.Snapshot()); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= time.Second, fmt.Sprintf("still %d requests after %s", last, time.Since(since))
	})
}

// reconcileAfter resets counter, makes change, and waits until the expert has reconciled after it and
// its requests have stopped.
func reconcileAfter(t *testing.T, counter *harness.RequestCounter, change func(*testing.T)) {
	t.Helper()
	counter.Reset()
	before := reconcileCount(t)
	change(t)
	waitForReconciles(t, before+1)
	waitQuiet(t, counter)
}

// writeKinds returns the distinct "verb resource" of the writes among reqs, sorted; nil when none.
func writeKinds(reqs harness.Requests) []string {
	var out []string
	for _, r := range reqs.Filter(harness.Request.IsWrite) {
		out = append(out, r.Verb+" "+r.FullResource())
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// converge creates a Welcome with spec, plays its rollout and waits until it is Ready.
func converge(t *testing.T, env *harness.Env, ns string, spec v1alpha1.WelcomeSpec) *v1alpha1.Welcome {
	t.Helper()
	w := createWelcome(t, env, ns, "site", spec)
	key := client.ObjectKeyFromObject(w)
	harness.WaitForObject(t, env.Client, key, &appsv1.Deployment{}, waitTimeout, nil)
	markRolledOut(t, env.Client, key)
	harness.WaitForObject(t, env.Client, key, w, waitTimeout, readyIs(metav1.ConditionTrue))
	return w
}

// mergePatch sends a JSON merge patch for obj through c.
func mergePatch(t *testing.T, c client.Client, obj client.Object, patch string) {
	t.Helper()
	if err := c.Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patch %T %s: %v", obj, obj.GetName(), err)
	}
}

// TestNoWritesOnceConverged reconciles a converged Welcome again, for every reason that wakes the
// expert without changing the job, and checks that it then sends no write at all: the API server's
// defaults and what others added to the children are not fought over, and an unchanged status is not
// written.
func TestNoWritesOnceConverged(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	counter := harness.NewRequestCounter()
	startExpert(t, env, counter.Wrap(env.Config))
	spec := fullSpec()
	spec.NodePort = nil // let the API server allocate one
	w := converge(t, env, ns, spec)
	key := client.ObjectKeyFromObject(w)
	waitQuiet(t, counter)
	t.Logf("requests to converge:\n%s", counter.Snapshot().InNamespace(ns))

	triggers := []struct {
		name    string
		trigger func(t *testing.T)
	}{
		{"label added to the page by someone else", func(t *testing.T) {
			mergePatch(t, env.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}, `{"metadata":{"labels":{"example.com/team":"web"}}}`)
		}},
		{"annotation added to the service by someone else", func(t *testing.T) {
			mergePatch(t, env.Client, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}, `{"metadata":{"annotations":{"example.com/scrape":"true"}}}`)
		}},
		// (Not an annotation: the API server bumps a Deployment's generation when its annotations
		// change, and the expert rightly reports Ready=False until the Deployment controller has
		// observed it.)
		{"label added to the deployment by someone else", func(t *testing.T) {
			mergePatch(t, env.Client, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}, `{"metadata":{"labels":{"example.com/team":"web"}}}`)
		}},
		{"deployment status changed by the deployment controller", func(t *testing.T) {
			dep := &appsv1.Deployment{}
			if err := env.Client.Get(t.Context(), key, dep); err != nil {
				t.Fatal(err)
			}
			dep.Status.Conditions = append(dep.Status.Conditions, appsv1.DeploymentCondition{
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
				LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
			})
			if err := env.Client.Status().Update(t.Context(), dep); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range triggers {
		t.Run(tc.name, func(t *testing.T) {
			reconcileAfter(t, counter, tc.trigger)
			reqs := counter.Snapshot().InNamespace(ns)
			if n := reqs.Writes(); n != 0 {
				t.Errorf("%d writes after reconciling a converged Welcome, want 0:\n%s", n, reqs)
			}
		})
	}

	// A restarted operator (here a second one, with a fresh cache) reconciles every Welcome once.
	t.Run("fresh manager", func(t *testing.T) {
		fresh := harness.NewRequestCounter()
		before := reconcileCount(t)
		startExpert(t, env, fresh.Wrap(env.Config))
		waitForReconciles(t, before+1)
		waitQuiet(t, fresh)
		reqs := fresh.Snapshot().InNamespace(ns)
		if n := reqs.Writes(); n != 0 {
			t.Errorf("%d writes from a fresh manager reconciling a converged Welcome, want 0:\n%s", n, reqs)
		}
	})
}

// patchRecorder records the body of every PATCH request made through the configs it wraps, by
// resource ("deployments", "welcomes/status").
type patchRecorder struct {
	mu      sync.Mutex
	patches map[string][]string
}

func (p *patchRecorder) wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodPatch || req.Body == nil {
				return next.RoundTrip(req)
			}
			body, err := io.ReadAll(req.Body)
			req.Body.Close()
			if err != nil {
				return nil, fmt.Errorf("read patch body: %w", err)
			}
			req = req.Clone(req.Context())
			req.Body = io.NopCloser(bytes.NewReader(body))
			info := harness.ParseRequest(req.Method, req.URL.Path, "")
			p.mu.Lock()
			p.patches[info.FullResource()] = append(p.patches[info.FullResource()], string(body))
			p.mu.Unlock()
			return next.RoundTrip(req)
		})
	})
	return out
}

func (p *patchRecorder) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.patches = map[string][]string{}
}

// paths returns, per resource, the sorted field paths the recorded patches set ("spec.replicas"; a
// list is one path, since a merge patch replaces it whole).
func (p *patchRecorder) paths(t *testing.T) map[string][]string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]string{}
	for resource, bodies := range p.patches {
		set := map[string]bool{}
		for _, body := range bodies {
			var doc map[string]any
			if err := json.Unmarshal([]byte(body), &doc); err != nil {
				t.Fatalf("decode patch of %s %q: %v", resource, body, err)
			}
			leafPaths("", doc, set)
		}
		out[resource] = slices.Sorted(maps.Keys(set))
	}
	return out
}

func leafPaths(prefix string, v any, into map[string]bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		into[prefix] = true
		return
	}
	for k, sub := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		leafPaths(p, sub, into)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestSpecChangePatchesOnlyWhatChanged changes a converged Welcome's spec, one field after another,
// and checks that the expert patches only the children the field shows in, with only the fields that
// changed, and the status; it never creates, updates or deletes.
func TestSpecChangePatchesOnlyWhatChanged(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	counter := harness.NewRequestCounter()
	recorder := &patchRecorder{patches: map[string][]string{}}
	startExpert(t, env, counter.Wrap(recorder.wrap(env.Config)))
	w := converge(t, env, ns, v1alpha1.WelcomeSpec{Name: "Alice"})
	key := client.ObjectKeyFromObject(w)
	waitQuiet(t, counter)

	generationStatus := []string{"status.conditions", "status.observedGeneration"}
	// The cases run in order, on the same Welcome.
	cases := []struct {
		name   string
		change func(*v1alpha1.WelcomeSpec)
		// done reports whether the children show the change.
		done func(cm *corev1.ConfigMap, dep *appsv1.Deployment, svc *corev1.Service, w *v1alpha1.Welcome) bool
		want map[string][]string // field paths patched, by resource
	}{
		{
			name:   "replicas",
			change: func(s *v1alpha1.WelcomeSpec) { s.Replicas = ptr.To[int32](2) },
			done: func(_ *corev1.ConfigMap, dep *appsv1.Deployment, _ *corev1.Service, _ *v1alpha1.Welcome) bool {
				return ptr.Deref(dep.Spec.Replicas, 0) == 2
			},
			want: map[string][]string{"deployments": {"spec.replicas"}, "welcomes/status": generationStatus},
		},
		{
			name:   "e-mail, shown on the page only",
			change: func(s *v1alpha1.WelcomeSpec) { s.Email = "alice@example.com" },
			done: func(cm *corev1.ConfigMap, _ *appsv1.Deployment, _ *corev1.Service, _ *v1alpha1.Welcome) bool {
				return strings.Contains(cm.Data[pageKey], "alice@example.com")
			},
			want: map[string][]string{"configmaps": {"data.page.html"}, "welcomes/status": generationStatus},
		},
		{
			name:   "port, in the container and the service",
			change: func(s *v1alpha1.WelcomeSpec) { s.Port = 9090 },
			done: func(_ *corev1.ConfigMap, dep *appsv1.Deployment, svc *corev1.Service, w *v1alpha1.Welcome) bool {
				return svc.Spec.Ports[0].Port == 9090 && dep.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort == 9090 &&
					strings.Contains(w.Status.ServiceURL, ":9090/")
			},
			want: map[string][]string{
				"deployments":     {"spec.template.spec.containers"},
				"services":        {"spec.ports"},
				"welcomes/status": {"status.conditions", "status.observedGeneration", "status.serviceURL"},
			},
		},
		{
			name:   "service type, the node port allocated by the API server",
			change: func(s *v1alpha1.WelcomeSpec) { s.ServiceType = corev1.ServiceTypeNodePort },
			done: func(_ *corev1.ConfigMap, _ *appsv1.Deployment, svc *corev1.Service, w *v1alpha1.Welcome) bool {
				return svc.Spec.Type == corev1.ServiceTypeNodePort && w.Status.NodePort != 0
			},
			want: map[string][]string{
				"services":        {"spec.type"},
				"welcomes/status": {"status.conditions", "status.nodePort", "status.nodePortURL", "status.observedGeneration"},
			},
		},
		{
			name:   "back to a cluster IP",
			change: func(s *v1alpha1.WelcomeSpec) { s.ServiceType = corev1.ServiceTypeClusterIP },
			done: func(_ *corev1.ConfigMap, _ *appsv1.Deployment, svc *corev1.Service, w *v1alpha1.Welcome) bool {
				return svc.Spec.Type == corev1.ServiceTypeClusterIP && w.Status.NodePort == 0
			},
			want: map[string][]string{
				"services":        {"spec.ports", "spec.type"},
				"welcomes/status": {"status.conditions", "status.nodePort", "status.nodePortURL", "status.observedGeneration"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			counter.Reset()
			recorder.reset()
			live := &v1alpha1.Welcome{}
			if err := env.Client.Get(t.Context(), key, live); err != nil {
				t.Fatal(err)
			}
			before := live.DeepCopy()
			tc.change(&live.Spec)
			if err := env.Client.Patch(t.Context(), live, client.MergeFrom(before)); err != nil {
				t.Fatalf("patch welcome: %v", err)
			}
			var (
				cm  corev1.ConfigMap
				dep appsv1.Deployment
				svc corev1.Service
			)
			harness.Eventually(t, waitTimeout, func() (bool, string) {
				for _, obj := range []client.Object{&cm, &dep, &svc, w} {
					if err := env.Client.Get(t.Context(), key, obj); err != nil {
						return false, err.Error()
					}
				}
				return w.Status.ObservedGeneration == live.Generation && tc.done(&cm, &dep, &svc, w),
					fmt.Sprintf("welcome generation %d, status:\n%s", live.Generation, harness.ObjectYAML(w))
			})
			waitQuiet(t, counter)

			reqs := counter.Snapshot().InNamespace(ns)
			writes := writeKinds(reqs)
			var wantWrites []string
			for resource := range tc.want {
				wantWrites = append(wantWrites, "patch "+resource)
			}
			sort.Strings(wantWrites)
			if diff := cmp.Diff(wantWrites, writes); diff != "" {
				t.Errorf("kinds of writes (-want +got):\n%s\n%s", diff, reqs)
			}
			if diff := cmp.Diff(tc.want, recorder.paths(t)); diff != "" {
				t.Errorf("fields patched (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServerSideApply checks the expert's ServerSideApply mode on the real API server: it writes the
// children with server-side applies owned by ControllerName, never a create; a reconcile that changes
// nothing writes nothing; a spec change applies only the child it shows in, and the status.
func TestServerSideApply(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	counter := harness.NewRequestCounter()
	startExpert(t, env, counter.Wrap(env.Config), func(r *Reconciler) { r.ServerSideApply = true })
	w := converge(t, env, ns, v1alpha1.WelcomeSpec{Name: "Alice"})
	key := client.ObjectKeyFromObject(w)
	waitQuiet(t, counter)

	if diff := cmp.Diff([]string{"patch configmaps", "patch deployments", "patch services", "patch welcomes/status"}, writeKinds(counter.Snapshot().InNamespace(ns))); diff != "" {
		t.Errorf("kinds of writes to converge (-want +got):\n%s", diff)
	}
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{}} {
		if err := env.Client.Get(t.Context(), key, obj); err != nil {
			t.Fatal(err)
		}
		var managers []string
		for _, m := range obj.GetManagedFields() {
			if m.Subresource == "" {
				managers = append(managers, m.Manager+" "+string(m.Operation))
			}
		}
		if diff := cmp.Diff([]string{ControllerName + " Apply"}, managers); diff != "" {
			t.Errorf("%T managers (-want +got):\n%s", obj, diff)
		}
	}

	steps := []struct {
		name   string
		change func(t *testing.T)
		want   []string
	}{
		{
			name: "label added to the deployment by someone else",
			change: func(t *testing.T) {
				mergePatch(t, env.Client, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}, `{"metadata":{"labels":{"example.com/team":"web"}}}`)
			},
		},
		{
			name: "replicas",
			change: func(t *testing.T) {
				mergePatch(t, env.Client, &v1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}, `{"spec":{"replicas":2}}`)
			},
			want: []string{"patch deployments", "patch welcomes/status"},
		},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			reconcileAfter(t, counter, step.change)
			// The label's patch is the test's own (not in the manager's counter).
			if diff := cmp.Diff(step.want, writeKinds(counter.Snapshot().InNamespace(ns))); diff != "" {
				t.Errorf("kinds of writes (-want +got):\n%s", diff)
			}
		})
	}
	dep := &appsv1.Deployment{}
	if err := env.Client.Get(t.Context(), key, dep); err != nil {
		t.Fatal(err)
	}
	got := []any{ptr.Deref(dep.Spec.Replicas, 0), dep.Labels["example.com/team"]}
	if diff := cmp.Diff([]any{int32(2), "web"}, got); diff != "" {
		t.Errorf("deployment replicas and the label someone else added (-want +got):\n%s", diff)
	}
}
