package reconcile

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/convergo-dev/convergo/internal/marks"
	"github.com/convergo-dev/convergo/ownership"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

// widgetKind is the owner kind of the childWatch tests.
var widgetKind = schema.GroupKind{Group: "test.convergo.dev", Kind: "Widget"}

// ownerKey is the owner every tracked test child names.
var ownerKey = types.NamespacedName{Namespace: "ns", Name: "w"}

// trackedMeta is the metadata of a child of ownerKey at version rv.
func trackedMeta(name, rv string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: rv, Generation: 1,
		Labels: map[string]string{
			ownership.OwnerUIDLabel: "owner-uid", marks.OwnerKind: widgetKind.Kind, marks.OwnerGroup: widgetKind.Group,
		},
		Annotations: map[string]string{marks.OwnerName: ownerKey.Name, marks.OwnerNamespace: ownerKey.Namespace},
	}
}

// deployment is a tracked Deployment "web" at version "1", available with 2 replicas.
func deployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: trackedMeta("web", "1"),
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
		Status:     appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2},
	}
}

// available is a graph.ReadyCheck of Deployments on the available replicas.
func available(live client.Object) (bool, string) {
	d := live.(*appsv1.Deployment)
	if want := ptr.Deref(d.Spec.Replicas, 1); d.Status.AvailableReplicas < want {
		return false, fmt.Sprintf("%d/%d replicas available", d.Status.AvailableReplicas, want)
	}
	return true, ""
}

// wakes reports whether w passes the update from old to new on at once.
func wakes(w *childWatch, old, new client.Object) bool {
	passed := false
	w.update(old, new, func() { passed = true })
	return passed
}

// TestChildWatchWakes: which updates of a child wake its owner.
func TestChildWatchWakes(t *testing.T) {
	type mutate func(client.Object)
	deploy := func(f func(*appsv1.Deployment)) mutate { return func(o client.Object) { f(o.(*appsv1.Deployment)) } }
	remembered := func(check graph.ReadyCheck) map[types.UID]verdict {
		v := verdict{check: check}
		if check != nil {
			v.reason, _ = judge(check, deployment())
		}
		return map[types.UID]verdict{"uid-web": v}
	}
	tests := []struct {
		name     string
		every    bool
		old      client.Object // default: deployment()
		change   mutate        // makes the new object from a copy of old; the version moves on unless noBump
		noBump   bool
		verdicts map[types.UID]verdict
		// busy: the update comes while a reconcile of the owner runs, which ends without judging.
		busy bool
		want bool
	}{
		{name: "status only, same verdict", change: deploy(func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 2 }),
			verdicts: remembered(available), want: false},
		{name: "status only, verdict flips", change: deploy(func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 2; d.Spec.Replicas = ptr.To[int32](2) }),
			old:      &appsv1.Deployment{ObjectMeta: trackedMeta("web", "1"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}},
			verdicts: map[types.UID]verdict{"uid-web": {check: available, reason: "0/2 replicas available"}}, want: true},
		{name: "status only, the reason changes", change: deploy(func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 1 }),
			old:      &appsv1.Deployment{ObjectMeta: trackedMeta("web", "1"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}},
			verdicts: map[types.UID]verdict{"uid-web": {check: available, reason: "0/2 replicas available"}}, want: true},
		{name: "status only, ready to not ready", change: deploy(func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 1 }),
			verdicts: remembered(available), want: true},
		{name: "status only, no remembered verdict", change: deploy(func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 2 }),
			want: true},
		{name: "status only, node without ReadyWhen", change: deploy(func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 0 }),
			verdicts: remembered(nil), want: false},
		{name: "status only, the owner is being reconciled", change: deploy(func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 2 }),
			verdicts: remembered(available), busy: true, want: true},
		{name: "status only, the check panics", change: deploy(func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 2 }),
			verdicts: map[types.UID]verdict{"uid-web": {check: func(client.Object) (bool, string) { panic("boom") }}}, want: true},
		{name: "status only, every change wakes", every: true, change: deploy(func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 2 }),
			verdicts: remembered(available), want: true},
		{name: "managedFields only", change: func(o client.Object) {
			o.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}})
		}, verdicts: remembered(available), want: false},
		{name: "resync (same resourceVersion)", change: func(client.Object) {}, noBump: true, verdicts: remembered(available), want: true},
		{name: "generation", change: func(o client.Object) { o.SetGeneration(2) }, verdicts: remembered(available), want: true},
		{name: "spec without a generation change", change: deploy(func(d *appsv1.Deployment) { d.Spec.Paused = true }),
			verdicts: remembered(available), want: true},
		{name: "labels", change: func(o client.Object) { o.GetLabels()["team"] = "a" }, verdicts: remembered(available), want: true},
		{name: "annotations", change: func(o client.Object) { o.GetAnnotations()["note"] = "a" }, verdicts: remembered(available), want: true},
		{name: "owner references", change: func(o client.Object) {
			o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Widget", Name: "w", UID: "owner-uid"}})
		}, verdicts: remembered(available), want: true},
		{name: "finalizers", change: func(o client.Object) { o.SetFinalizers([]string{"x/y"}) }, verdicts: remembered(available), want: true},
		{name: "deletion timestamp", change: func(o client.Object) { o.SetDeletionTimestamp(&metav1.Time{Time: time.Unix(1, 0)}) },
			verdicts: remembered(available), want: true},
		{name: "the version the owner judged (the answer to its own write)", change: func(o client.Object) { o.SetGeneration(2) },
			verdicts: map[types.UID]verdict{"uid-web": {check: available, reason: "waiting", rv: "2"}}, want: false},
		{name: "the version the owner judged, while it is reconciled again", change: func(o client.Object) { o.SetGeneration(2) },
			verdicts: map[types.UID]verdict{"uid-web": {check: available, reason: "waiting", rv: "2"}}, busy: true, want: true},
		{name: "a version after the one the owner judged", change: func(o client.Object) { o.SetGeneration(2) },
			verdicts: map[types.UID]verdict{"uid-web": {check: available, rv: "1"}}, want: true},
		{name: "another object under the name (UID)", change: func(o client.Object) { o.SetUID("other") }, verdicts: remembered(available), want: true},
		{name: "not a child of the owner kind", change: func(o client.Object) {
			o.GetLabels()[marks.OwnerKind] = "Other"
			o.SetResourceVersion("2")
		}, old: func() client.Object {
			d := deployment()
			d.Labels[marks.OwnerKind] = "Other"
			return d
		}(), verdicts: remembered(available), want: true},
		{name: "ConfigMap data", old: &corev1.ConfigMap{ObjectMeta: trackedMeta("web", "1"), Data: map[string]string{"k": "v"}},
			change: func(o client.Object) { o.(*corev1.ConfigMap).Data["k"] = "w" }, verdicts: remembered(nil), want: true},
		{name: "ConfigMap unchanged but its version", old: &corev1.ConfigMap{ObjectMeta: trackedMeta("web", "1"), Data: map[string]string{"k": "v"}},
			change: func(client.Object) {}, verdicts: remembered(nil), want: false},
		{name: "Service status only", old: &corev1.Service{ObjectMeta: trackedMeta("web", "1"), Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1"}},
			change: func(o client.Object) {
				o.(*corev1.Service).Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}
			}, verdicts: remembered(nil), want: false},
		{name: "Service spec", old: &corev1.Service{ObjectMeta: trackedMeta("web", "1"), Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1"}},
			change: func(o client.Object) { o.(*corev1.Service).Spec.ClusterIP = "10.0.0.2" }, verdicts: remembered(nil), want: true},
		{name: "unstructured status only", old: unstructuredChild(), change: func(o client.Object) {
			_ = unstructured.SetNestedField(o.(*unstructured.Unstructured).Object, "Running", "status", "phase")
		}, verdicts: remembered(nil), want: false},
		{name: "unstructured spec", old: unstructuredChild(), change: func(o client.Object) {
			_ = unstructured.SetNestedField(o.(*unstructured.Unstructured).Object, int64(3), "spec", "size")
		}, verdicts: remembered(nil), want: true},
		{name: "unstructured new top-level field", old: unstructuredChild(), change: func(o client.Object) {
			o.(*unstructured.Unstructured).Object["data"] = map[string]any{"k": "v"}
		}, verdicts: remembered(nil), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newChildWatch(widgetKind, tt.every)
			for uid, v := range tt.verdicts {
				w.set(uid, v)
			}
			old := tt.old
			if old == nil {
				old = deployment()
			}
			updated := old.DeepCopyObject().(client.Object)
			if !tt.noBump {
				updated.SetResourceVersion("2")
			}
			tt.change(updated)
			passed := 0
			pass := func() { passed++ }
			if tt.busy {
				j := w.judge(ownerKey)
				w.update(old, updated, pass)
				if passed != 0 {
					t.Errorf("the update was passed on while the owner's reconcile runs")
				}
				j.end()
			} else {
				w.update(old, updated, pass)
			}
			if got := passed == 1; got != tt.want || passed > 1 {
				t.Errorf("passed on %d times, want wakes = %v", passed, tt.want)
			}
		})
	}
}

// unstructuredChild is a tracked custom object "web" with a spec and a status.
func unstructuredChild() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Cache",
		"spec":   map[string]any{"size": int64(2)},
		"status": map[string]any{"phase": "Pending"},
	}}
	meta := trackedMeta("web", "1")
	u.SetName(meta.Name)
	u.SetNamespace(meta.Namespace)
	u.SetUID(meta.UID)
	u.SetResourceVersion(meta.ResourceVersion)
	u.SetGeneration(meta.Generation)
	u.SetLabels(meta.Labels)
	u.SetAnnotations(meta.Annotations)
	return u
}

// TestChildWatchRemember: a reconcile's verdicts are remembered for the children it applied, with the
// check of their node and the version judged; a node without ReadyWhen remembers "ready"; a child not
// applied is not remembered. While a reconcile judges, any update wakes the owner; once it has
// remembered its verdicts, they decide.
func TestChildWatchRemember(t *testing.T) {
	g := graph.New()
	g.Add("web", deployment()).ReadyWhen(available)
	g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config"}})
	g.Add("waiting", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "waiting"}})
	notAvailable := deployment()
	notAvailable.Status.AvailableReplicas = 1
	res := &graph.Result{Children: []graph.ChildResult{
		{Name: "web", Applied: true, Object: notAvailable},
		{Name: "config", Applied: true, Object: &corev1.ConfigMap{ObjectMeta: trackedMeta("config", "1")}},
		{Name: "waiting", Applied: false},
	}}
	w := newChildWatch(widgetKind, false)
	w.remember(w.judge(ownerKey), g, res)

	got := map[types.UID]string{}
	for _, uid := range []types.UID{"uid-web", "uid-config", "uid-waiting"} {
		if v, ok := w.lookup(uid); ok {
			got[uid] = fmt.Sprintf("check=%v ready=%v reason=%q rv=%s", v.check != nil, v.reason == "", v.reason, v.rv)
		}
	}
	want := map[types.UID]string{
		"uid-web":    `check=true ready=false reason="1/2 replicas available" rv=1`,
		"uid-config": `check=false ready=true reason="" rv=1`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("remembered verdicts (-want +got):\n%s", diff)
	}

	sameVerdict := notAvailable.DeepCopy()
	sameVerdict.ResourceVersion, sameVerdict.Status.ReadyReplicas = "2", 1
	if wakes(w, notAvailable, sameVerdict) {
		t.Error("an update with the remembered verdict woke the owner")
	}
	nowAvailable := sameVerdict.DeepCopy()
	nowAvailable.ResourceVersion, nowAvailable.Status.AvailableReplicas = "3", 2
	if !wakes(w, sameVerdict, nowAvailable) {
		t.Error("an update that makes the child ready did not wake the owner")
	}
}

// TestChildWatchHoldsUpdatesWhileJudging: the updates that come while a reconcile of the owner runs
// are decided once it has remembered what it judged: the version it judged (its own write's answer)
// wakes nothing, a later one whose verdict differs does; a reconcile that ends without judging passes
// every held update on. The owner's other reconciles still running keep them held.
func TestChildWatchHoldsUpdatesWhileJudging(t *testing.T) {
	g := graph.New()
	g.Add("web", deployment()).ReadyWhen(available)
	v1 := deployment() // ready
	v2 := v1.DeepCopy()
	v2.ResourceVersion, v2.Generation, v2.Spec.Replicas = "2", 2, ptr.To[int32](3) // the reconcile's own write
	v3 := v2.DeepCopy()
	v3.ResourceVersion, v3.Status.ObservedGeneration, v3.Status.AvailableReplicas = "3", 2, 3 // then the Deployment controller's
	judged := func(d *appsv1.Deployment) *graph.Result {
		return &graph.Result{Children: []graph.ChildResult{{Name: "web", Applied: true, Object: d}}}
	}

	tests := []struct {
		name    string
		updates [][2]*appsv1.Deployment
		// judged is the version the reconcile judged; nil: it ends without judging.
		judged *appsv1.Deployment
		want   int
	}{
		{name: "the answer to its own write", updates: [][2]*appsv1.Deployment{{v1, v2}}, judged: v2, want: 0},
		{name: "its own write, then a status change that changes the verdict",
			updates: [][2]*appsv1.Deployment{{v1, v2}, {v2, v3}}, judged: v2, want: 1},
		{name: "a version after the judged one, same verdict", updates: [][2]*appsv1.Deployment{{v1, v2}},
			judged: v1, want: 1}, // v2 changes the spec
		{name: "ended without judging", updates: [][2]*appsv1.Deployment{{v1, v2}, {v2, v3}}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newChildWatch(widgetKind, false)
			w.remember(w.judge(ownerKey), g, judged(v1))
			passed := 0
			j := w.judge(ownerKey)
			for _, u := range tt.updates {
				w.update(u[0], u[1], func() { passed++ })
			}
			if passed != 0 {
				t.Fatalf("%d updates passed on while the reconcile runs", passed)
			}
			if tt.judged != nil {
				w.remember(j, g, judged(tt.judged))
			}
			j.end()
			if passed != tt.want {
				t.Errorf("%d updates passed on once the reconcile ended, want %d", passed, tt.want)
			}
		})
	}

	// Two reconciles of the owner at once (a direct call beside the worker): held until both end.
	w := newChildWatch(widgetKind, false)
	first, second := w.judge(ownerKey), w.judge(ownerKey)
	passed := 0
	w.update(v1, v2, func() { passed++ })
	w.remember(first, g, judged(v1))
	if passed != 0 {
		t.Errorf("passed on while another reconcile of the owner runs")
	}
	second.end()
	if passed != 1 {
		t.Errorf("passed on %d times once both reconciles ended, want 1", passed)
	}
	if len(w.busy) != 0 {
		t.Errorf("owners still judging: %v", w.busy)
	}

	// With WithEveryChildChange nothing is remembered.
	every := newChildWatch(widgetKind, true)
	every.remember(every.judge(ownerKey), g, judged(v1))
	if n := every.remembered(); n != 0 {
		t.Errorf("WithEveryChildChange remembered %d verdicts, want 0", n)
	}
}

// TestChildWatchBounded: the remembered verdicts never exceed maxVerdicts, whether their nodes have
// a ReadyWhen check or not, or some have one.
func TestChildWatchBounded(t *testing.T) {
	tests := map[string]func(i int) bool{ // whether the i-th child's node has a check
		"without check": func(int) bool { return false },
		"with check":    func(int) bool { return true },
		"mixed":         func(i int) bool { return i%2 == 0 },
	}
	for name, checked := range tests {
		t.Run(name, func(t *testing.T) {
			w := newChildWatch(widgetKind, false)
			g := graph.New()
			g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config"}})
			g.Add("web", deployment()).ReadyWhen(available)
			for i := range maxVerdicts + 10 {
				child := graph.ChildResult{Name: "config", Applied: true, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config", UID: types.UID(fmt.Sprint(i))}}}
				if checked(i) {
					d := deployment()
					d.UID = types.UID(fmt.Sprint(i))
					child = graph.ChildResult{Name: "web", Applied: true, Object: d}
				}
				w.remember(w.judge(ownerKey), g, &graph.Result{Children: []graph.ChildResult{child}})
			}
			if n := w.remembered(); n > maxVerdicts || n == 0 {
				t.Errorf("remembered %d verdicts, want between 1 and %d", n, maxVerdicts)
			}
			if len(w.busy) != 0 {
				t.Errorf("owners still judging after every reconcile remembered: %v", w.busy)
			}
		})
	}
}

// TestQuietChildrenHandler: the handler passes creates, deletes and generic events on, forgets the
// verdict of a deleted child, and passes an update on only when the childWatch says so.
func TestQuietChildrenHandler(t *testing.T) {
	w := newChildWatch(widgetKind, false)
	w.set("uid-web", verdict{check: available})
	h := w.handler(handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrlreconcile.Request {
		ref, _ := ownership.TrackedOwner(o)
		return []ctrlreconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}}
	}))
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[ctrlreconcile.Request]())
	defer q.ShutDown()
	drain := func() int {
		n := q.Len()
		for range n {
			item, _ := q.Get()
			q.Done(item)
			q.Forget(item)
		}
		return n
	}
	ctx := t.Context()
	old := deployment()
	quiet := old.DeepCopy()
	quiet.ResourceVersion, quiet.Status.ReadyReplicas = "2", 2

	steps := []struct {
		name string
		send func()
		want int
	}{
		{"create", func() { h.Create(ctx, event.CreateEvent{Object: old}, q) }, 1},
		{"status-only update with the same verdict", func() { h.Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: quiet}, q) }, 0},
		{"generic", func() { h.Generic(ctx, event.GenericEvent{Object: old}, q) }, 1},
		{"delete", func() { h.Delete(ctx, event.DeleteEvent{Object: quiet}, q) }, 1},
		{"the same update once the child's verdict is forgotten", func() { h.Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: quiet}, q) }, 1},
	}
	for _, s := range steps {
		s.send()
		if got := drain(); got != s.want {
			t.Errorf("%s: %d requests, want %d", s.name, got, s.want)
		}
	}
}
