package status

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var (
	fuzzTypes    = []string{Ready, Reconciling, Stalled, "A", "Degraded"}
	fuzzStatuses = []metav1.ConditionStatus{True, False, Unknown}
	fuzzReasons  = []string{"R1", "R2"}
)

// FuzzSetConditions drives random sequences of condition operations and checks the invariants after each:
// kstatus (Reconciling and Stalled never both True, Ready=True with neither), unique types, stable order,
// lastTransitionTime unchanged unless the status changed, observedGeneration stamped, the changed result
// honest, and every operation idempotent.
func FuzzSetConditions(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 0, 2, 2, 1, 3, 0, 0})
	f.Add([]byte{4, 3, 0, 5, 0, 0, 6, 0, 0, 0, 1, 0, 0, 2, 0})
	f.Add([]byte{2, 0, 1, 7, 0, 0, 1, 2, 0, 0, 0, 0, 3, 4, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		saved := now
		now = func() time.Time { return clock }
		defer func() { now = saved }()

		w := widget(1)
		for i := 0; i+2 < len(ops) && i < 300; i += 3 {
			kind, typ := ops[i]%9, fuzzTypes[int(ops[i+1])%len(fuzzTypes)]
			st, reason := fuzzStatuses[int(ops[i+2])%3], fuzzReasons[int(ops[i+2])/3%2]
			msg := fmt.Sprintf("m%d", ops[i+2]%4)
			var op func() bool
			var setType string // the condition the operation sets (and must stamp), if any
			switch kind {
			case 0, 1:
				if st == True || (typ != Reconciling && typ != Stalled) {
					setType = typ // Reconciling/Stalled other than True are removed instead
				}
				op = func() bool { return Set(w, metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg}) }
			case 2:
				setType = Ready
				op = func() bool { return MarkReady(w, reason, msg) }
			case 3:
				setType = Reconciling
				op = func() bool { return MarkReconciling(w, reason, msg) }
			case 4:
				setType = Stalled
				op = func() bool { return MarkStalled(w, reason, msg) }
			case 5:
				op = func() bool { return Remove(w, typ) }
			case 6:
				setType = Ready
				op = func() bool {
					return Summarize(w, Summary{Conditions: []string{"A"}, NegativePolarity: []string{"Degraded"}})
				}
			case 7:
				w.Generation++
				continue
			case 8:
				clock = clock.Add(time.Duration(ops[i+2]) * time.Second)
				continue
			}
			before := w.DeepCopy()
			changed := op()
			label := fmt.Sprintf("op %d (kind %d type %s status %s)", i/3, kind, typ, st)
			checkInvariants(t, label, before.Status.Conditions, w.Status.Conditions)
			if equal := reflect.DeepEqual(before.Status, w.Status); changed == equal {
				t.Fatalf("%s: changed=%v but status equal=%v\nbefore %v\nafter  %v", label, changed, equal, before.Status, w.Status)
			}
			if setType != "" {
				if c := get(w, setType); c != nil && c.ObservedGeneration != w.Generation {
					t.Fatalf("%s: %s has observedGeneration %d, generation %d", label, setType, c.ObservedGeneration, w.Generation)
				}
			}
			if changed && kind != 5 && w.Status.ObservedGeneration != w.Generation {
				t.Fatalf("%s: status.observedGeneration %d, generation %d", label, w.Status.ObservedGeneration, w.Generation)
			}
			again := w.DeepCopy()
			if op() || !reflect.DeepEqual(again.Status, w.Status) {
				t.Fatalf("%s: not idempotent\nfirst  %v\nsecond %v", label, again.Status.Conditions, w.Status.Conditions)
			}
		}
	})
}

func checkInvariants(t *testing.T, label string, before, after []metav1.Condition) {
	t.Helper()
	var types []string
	for _, c := range after {
		if slices.Contains(types, c.Type) {
			t.Fatalf("%s: duplicate condition %s: %v", label, c.Type, after)
		}
		types = append(types, c.Type)
		if (c.Type == Reconciling || c.Type == Stalled) && c.Status != True {
			t.Fatalf("%s: abnormal-true condition %s kept with status %s", label, c.Type, c.Status)
		}
	}
	has := func(t string, s metav1.ConditionStatus) bool {
		i := slices.IndexFunc(after, func(c metav1.Condition) bool { return c.Type == t })
		return i >= 0 && after[i].Status == s
	}
	if has(Reconciling, True) && has(Stalled, True) {
		t.Fatalf("%s: Reconciling and Stalled both True: %v", label, after)
	}
	if has(Ready, True) && (has(Reconciling, True) || has(Stalled, True)) {
		t.Fatalf("%s: Ready=True with Reconciling or Stalled: %v", label, after)
	}
	var kept []string
	for _, b := range before {
		i := slices.IndexFunc(after, func(c metav1.Condition) bool { return c.Type == b.Type })
		if i < 0 {
			continue
		}
		kept = append(kept, b.Type)
		if after[i].Status == b.Status && !after[i].LastTransitionTime.Equal(&b.LastTransitionTime) {
			t.Fatalf("%s: %s kept status %s but lastTransitionTime moved %v -> %v", label, b.Type, b.Status, b.LastTransitionTime, after[i].LastTransitionTime)
		}
	}
	var order []string
	for _, a := range after {
		if slices.Contains(kept, a.Type) {
			order = append(order, a.Type)
		}
	}
	if !slices.Equal(kept, order) {
		t.Fatalf("%s: order of existing conditions changed: %v -> %v", label, kept, order)
	}
}

// FuzzPatchDelta checks the conflict merge of the Patcher: applying our delta (old -> cur) onto any fresh
// status keeps every condition only others touched, holds exactly our version of the ones we changed,
// drops the ones we removed, never duplicates a type, and turns old itself into cur.
func FuzzPatchDelta(f *testing.F) {
	f.Add([]byte{0, 1, 2}, []byte{0, 4, 3}, []byte{5, 1, 6})
	f.Add([]byte{}, []byte{7, 8}, []byte{8, 7})
	f.Fuzz(func(t *testing.T, oldB, curB, freshB []byte) {
		old, cur, fresh := fuzzStatus(oldB), fuzzStatus(curB), fuzzStatus(freshB)
		d := computeDelta(old, cur)
		merged := d.applyTo(fresh)
		mergedConds, _ := conditionList(merged)
		freshConds, _ := conditionList(fresh)
		var seen []string
		for _, m := range mergedConds {
			if slices.Contains(seen, condType(m)) {
				t.Fatalf("duplicate %s in %v", condType(m), merged)
			}
			seen = append(seen, condType(m))
		}
		for _, fc := range freshConds {
			typ := condType(fc)
			ours := findCondition(d.setConds, typ)
			got := findCondition(mergedConds, typ)
			switch {
			case slices.Contains(d.removedConds, typ):
				if got != nil {
					t.Fatalf("%s removed by us but kept: %v", typ, merged)
				}
			case ours != nil:
				if !reflect.DeepEqual(ours, got) {
					t.Fatalf("%s: want ours %v, got %v", typ, ours, got)
				}
			default:
				if !reflect.DeepEqual(fc, got) {
					t.Fatalf("%s: others' condition %v changed to %v", typ, fc, got)
				}
			}
		}
		for _, ours := range d.setConds {
			if got := findCondition(mergedConds, condType(ours)); !reflect.DeepEqual(ours, got) {
				t.Fatalf("ours %v missing or different in %v", ours, merged)
			}
		}
		if got := d.applyTo(old); !reflect.DeepEqual(byType(cur), byType(got)) {
			t.Fatalf("delta applied to old:\n got %v\nwant %v", got, cur)
		}
	})
}

// fuzzStatus builds a status whose condition list has unique types (one byte per condition: type and
// status) and a summary field.
func fuzzStatus(b []byte) map[string]any {
	st := map[string]any{}
	var conds []any
	var seen []string
	for _, x := range b {
		typ := fuzzTypes[int(x)%len(fuzzTypes)]
		if slices.Contains(seen, typ) {
			continue
		}
		seen = append(seen, typ)
		conds = append(conds, map[string]any{"type": typ, "status": string(fuzzStatuses[int(x)/len(fuzzTypes)%3])})
	}
	if len(conds) > 0 {
		st["conditions"] = conds
	}
	if len(b) > 0 && b[0]%2 == 0 {
		st["summary"] = fmt.Sprint(b[0] % 4)
	}
	return runtime.DeepCopyJSON(st)
}

// byType replaces a status's condition list by a map keyed by type, for order-insensitive comparison.
func byType(st map[string]any) map[string]any {
	out := withoutConditions(st)
	conds, _ := conditionList(st)
	m := map[string]any{}
	for _, c := range conds {
		m[condType(c)] = c
	}
	if len(m) > 0 {
		out["conditions"] = m
	}
	return out
}
