package reconcile

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/convergo-dev/convergo/internal/telemetry"
	"github.com/convergo-dev/convergo/internal/testapi"
)

func TestTriggers(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "w"}
	widget := func(created time.Time) *testapi.Widget {
		return &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", CreationTimestamp: metav1.NewTime(created)}}
	}
	cases := map[string]struct {
		steps func(tr *triggers)
		want  []trigger // what take returns, once per reconcile
	}{
		"nothing noted": {steps: func(*triggers) {}, want: []trigger{{why: triggerUnknown}}},
		"the first event wins until the reconcile begins": {
			steps: func(tr *triggers) {
				tr.note(key, trigger{why: triggerChild, detail: "ConfigMap ns/a"})
				tr.note(key, trigger{why: triggerChanged})
			},
			want: []trigger{{why: triggerChild, detail: "ConfigMap ns/a"}, {why: triggerUnknown}},
		},
		"an event comes before the requeue it was asked for": {
			steps: func(tr *triggers) {
				tr.requeued(key, triggerInterval)
				tr.note(key, trigger{why: triggerChanged})
			},
			want: []trigger{{why: triggerChanged}, {why: triggerUnknown}},
		},
		"a requeue, then a retry": {
			steps: func(tr *triggers) { tr.requeued(key, triggerExternal) },
			want:  []trigger{{why: triggerExternal}},
		},
		"listed at start-up, then created": {
			steps: func(tr *triggers) {
				p := tr.ownEvents()
				p.Create(event.CreateEvent{Object: widget(tr.started.Add(-time.Hour))})
			},
			want: []trigger{{why: triggerStartup}},
		},
		"created after the start": {
			steps: func(tr *triggers) {
				tr.ownEvents().Create(event.CreateEvent{Object: widget(tr.started.Add(time.Hour))})
			},
			want: []trigger{{why: triggerCreated}},
		},
		"changed": {
			steps: func(tr *triggers) {
				tr.ownEvents().Update(event.UpdateEvent{ObjectOld: widget(tr.started), ObjectNew: widget(tr.started)})
			},
			want: []trigger{{why: triggerChanged}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := newTriggers()
			tc.steps(tr)
			var got []trigger
			for range tc.want {
				got = append(got, tr.take(key))
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(trigger{})); diff != "" {
				t.Errorf("triggers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRepairing(t *testing.T) {
	widget := func(generation, readySeen int64) *testapi.Widget {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: generation}}
		if readySeen > 0 {
			w.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: readySeen}}
		}
		return w
	}
	cases := map[string]struct {
		trigger, object string
		owner           *testapi.Widget
		want            bool
	}{
		"a child changed, spec applied":         {trigger: "child", object: "ConfigMap ns/w", owner: widget(2, 2), want: true},
		"start-up, spec applied":                {trigger: "start-up", owner: widget(2, 2), want: true},
		"the interval, spec applied":            {trigger: "interval", owner: widget(2, 2), want: true},
		"a child changed, spec not yet applied": {trigger: "child", object: "ConfigMap ns/w", owner: widget(3, 2)},
		"start-up, spec changed meanwhile":      {trigger: "start-up", owner: widget(3, 2)},
		"the owner changed":                     {trigger: "changed", owner: widget(2, 2)},
		"an input a watch maps changed":         {trigger: "watch", object: "Secret ns/s", owner: widget(2, 2)},
		"no Ready condition yet":                {trigger: "child", object: "ConfigMap ns/w", owner: widget(1, 0)},
		"no trigger (the Applier alone)":        {owner: widget(2, 2)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			if tc.trigger != "" {
				ctx = telemetry.WithTrigger(ctx, tc.trigger, tc.object)
			}
			if got := repairing(ctx, tc.owner); got != tc.want {
				t.Errorf("repairing = %v, want %v", got, tc.want)
			}
		})
	}
}
