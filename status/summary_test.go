package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSummarize(t *testing.T) {
	s := Summary{Conditions: []string{"Available", "Synced", "Degraded"}, NegativePolarity: []string{"Degraded"}}
	cases := map[string]struct {
		summary Summary
		start   []metav1.Condition
		want    metav1.Condition // the Ready condition
	}{
		"all good": {
			summary: s,
			start:   []metav1.Condition{cond("Available", True, "A", "", 2, t0), cond("Synced", True, "S", "", 2, t0)},
			want:    cond(Ready, True, "Succeeded", "all conditions are ready", 2, t1),
		},
		"custom ready reason and message": {
			summary: Summary{Conditions: []string{"Synced"}, Reason: "Serving", Message: "3 replicas"},
			start:   []metav1.Condition{cond("Synced", True, "S", "", 2, t0)},
			want:    cond(Ready, True, "Serving", "3 replicas", 2, t1),
		},
		"first failing condition in priority order explains": {
			summary: s,
			start:   []metav1.Condition{cond("Synced", False, "SyncFailed", "bad key", 2, t0), cond("Available", False, "NoReplicas", "0 of 3", 2, t0)},
			want:    cond(Ready, False, "NoReplicas", "Available: 0 of 3", 2, t1),
		},
		"missing positive condition is Unknown": {
			summary: s,
			start:   []metav1.Condition{cond("Available", True, "A", "", 2, t0)},
			want:    cond(Ready, Unknown, "SyncedNotReported", "Synced: not reported yet", 2, t1),
		},
		"negative polarity True is bad": {
			summary: s,
			start: []metav1.Condition{
				cond("Available", True, "A", "", 2, t0), cond("Synced", True, "S", "", 2, t0),
				cond("Degraded", True, "DiskFull", "disk 98%", 2, t0),
			},
			want: cond(Ready, False, "DiskFull", "Degraded: disk 98%", 2, t1),
		},
		"negative polarity False is good": {
			summary: s,
			start: []metav1.Condition{
				cond("Available", True, "A", "", 2, t0), cond("Synced", True, "S", "", 2, t0),
				cond("Degraded", False, "Fine", "", 2, t0),
			},
			want: cond(Ready, True, "Succeeded", "all conditions are ready", 2, t1),
		},
		"negative polarity only listed there is considered": {
			summary: Summary{NegativePolarity: []string{"Degraded"}},
			start:   []metav1.Condition{cond("Degraded", True, "DiskFull", "", 2, t0)},
			want:    cond(Ready, False, "DiskFull", "Degraded", 2, t1),
		},
		"Unknown sub-condition without reason": {
			summary: Summary{Conditions: []string{"Synced"}},
			start:   []metav1.Condition{cond("Synced", Unknown, "", "", 2, t0)},
			want:    cond(Ready, Unknown, "SyncedNotReady", "Synced", 2, t1),
		},
		"outdated sub-condition is Unknown": {
			summary: Summary{Conditions: []string{"Synced"}},
			start:   []metav1.Condition{cond("Synced", True, "S", "", 1, t0)},
			want:    cond(Ready, Unknown, "SyncedOutdated", "Synced: observed generation 1, current 2", 2, t1),
		},
		"stalled wins": {
			summary: s,
			start:   []metav1.Condition{cond(Stalled, True, "InvalidSpec", "no", 2, t0), cond("Available", False, "X", "", 2, t0)},
			want:    cond(Ready, False, "InvalidSpec", "no", 2, t1),
		},
		"reconciling blocks Ready=True": {
			summary: Summary{Conditions: []string{"Synced"}},
			start:   []metav1.Condition{cond(Reconciling, True, "Progressing", "rolling", 2, t0), cond("Synced", True, "S", "", 2, t0)},
			want:    cond(Ready, False, "Progressing", "rolling", 2, t1),
		},
		"Ready in the list is ignored": {
			summary: Summary{Conditions: []string{Ready}},
			start:   nil,
			want:    cond(Ready, True, "Succeeded", "all conditions are ready", 2, t1),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pinClock(t, t1)
			w := widget(2, tc.start...)
			if !Summarize(w, tc.summary) {
				t.Error("Summarize reported no change")
			}
			if diff := cmp.Diff(&tc.want, get(w, Ready)); diff != "" {
				t.Errorf("Ready (-want +got):\n%s", diff)
			}
			if Summarize(w, tc.summary) {
				t.Error("second Summarize reported a change")
			}
			if isTrue(w, Ready) && (isTrue(w, Reconciling) || isTrue(w, Stalled)) {
				t.Errorf("kstatus violated: %v", w.Status.Conditions)
			}
		})
	}
}
