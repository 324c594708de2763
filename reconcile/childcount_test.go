package reconcile

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/convergo-dev/convergo/ownership"
)

func trackedBy(name, owner string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if owner != "" {
		cm.Labels = map[string]string{ownership.OwnerUIDLabel: owner}
	}
	return cm
}

// childEvent is one event given to a counting handler: create, update (old to obj) or delete.
type childEvent struct {
	op       string
	obj, old client.Object
}

func TestChildCounts(t *testing.T) {
	configMaps := schema.GroupKind{Kind: "ConfigMap"}
	secrets := schema.GroupKind{Kind: "Secret"}
	tests := []struct {
		name   string
		events []childEvent
		// want: mayHoldUndeclared for owner "a" with 1 declared ConfigMap, for owner "b" with 0
		// declared, and for a kind not counted.
		want []bool
	}{
		{name: "no child", want: []bool{false, false, true}},
		{name: "the declared child", events: []childEvent{{op: "create", obj: trackedBy("a1", "a")}}, want: []bool{false, false, true}},
		{name: "one more than declared", events: []childEvent{
			{op: "create", obj: trackedBy("a1", "a")}, {op: "create", obj: trackedBy("a2", "a")},
		}, want: []bool{true, false, true}},
		{name: "the extra one deleted", events: []childEvent{
			{op: "create", obj: trackedBy("a1", "a")}, {op: "create", obj: trackedBy("a2", "a")}, {op: "delete", obj: trackedBy("a2", "a")},
		}, want: []bool{false, false, true}},
		{name: "another owner's child", events: []childEvent{
			{op: "create", obj: trackedBy("a1", "a")}, {op: "create", obj: trackedBy("b1", "b")},
		}, want: []bool{false, true, true}},
		{name: "untracked objects are not counted", events: []childEvent{
			{op: "create", obj: trackedBy("x", "")}, {op: "create", obj: trackedBy("y", "")},
		}, want: []bool{false, false, true}},
		{name: "tracking label moved to another owner", events: []childEvent{
			{op: "create", obj: trackedBy("a1", "a")}, {op: "create", obj: trackedBy("a2", "a")},
			{op: "update", old: trackedBy("a2", "a"), obj: trackedBy("a2", "b")},
		}, want: []bool{false, true, true}},
		{name: "tracking label added", events: []childEvent{
			{op: "create", obj: trackedBy("a1", "a")}, {op: "create", obj: trackedBy("x", "")},
			{op: "update", old: trackedBy("x", ""), obj: trackedBy("x", "a")},
		}, want: []bool{true, false, true}},
		{name: "update without label change", events: []childEvent{
			{op: "create", obj: trackedBy("a1", "a")}, {op: "update", old: trackedBy("a1", "a"), obj: trackedBy("a1", "a")},
		}, want: []bool{false, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChildCounts()
			next := &passedOn{}
			h := c.handler(configMaps, next)
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[ctrlreconcile.Request]())
			defer q.ShutDown()
			for _, e := range tt.events {
				switch e.op {
				case "create":
					h.Create(t.Context(), event.CreateEvent{Object: e.obj}, q)
				case "update":
					h.Update(t.Context(), event.UpdateEvent{ObjectOld: e.old, ObjectNew: e.obj}, q)
				case "delete":
					h.Delete(t.Context(), event.DeleteEvent{Object: e.obj}, q)
				}
			}
			got := []bool{
				c.mayHoldUndeclared("a", configMaps, 1),
				c.mayHoldUndeclared("b", configMaps, 0),
				c.mayHoldUndeclared("a", secrets, 5),
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mayHoldUndeclared (-want +got):\n%s", diff)
			}
			if next.events != len(tt.events) {
				t.Errorf("%d events passed on, want all %d", next.events, len(tt.events))
			}
			if owners := len(c.byOwner); owners > 2 {
				t.Errorf("%d owners held, want at most the 2 with counted children", owners)
			}
		})
	}
}

// TestChildCountsForgetOwners: an owner whose counted children are all gone is not held.
func TestChildCountsForgetOwners(t *testing.T) {
	c := newChildCounts()
	h := c.handler(schema.GroupKind{Kind: "ConfigMap"}, &passedOn{})
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[ctrlreconcile.Request]())
	defer q.ShutDown()
	h.Create(t.Context(), event.CreateEvent{Object: trackedBy("a1", "a")}, q)
	h.Delete(t.Context(), event.DeleteEvent{Object: trackedBy("a1", "a")}, q)
	if diff := cmp.Diff(map[types.UID][]int32{}, c.byOwner); diff != "" {
		t.Errorf("owners held (-want +got):\n%s", diff)
	}
}

// passedOn counts the events a counting handler passes on.
type passedOn struct {
	handler.Funcs
	events int
}

func (p *passedOn) Create(_ context.Context, _ event.CreateEvent, _ workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
	p.events++
}

func (p *passedOn) Update(_ context.Context, _ event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
	p.events++
}

func (p *passedOn) Delete(_ context.Context, _ event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
	p.events++
}
