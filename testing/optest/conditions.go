package optest

import (
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/convergo-dev/convergo/status"
)

// StatusObject is a custom resource whose status holds conditions and a top-level
// status.observedGeneration (read by GetObservedGeneration), as a Convergo operator's types do.
type StatusObject interface {
	status.Object
	GetObservedGeneration() int64
}

// Condition returns "Status/Reason" of obj's condition condType (for example "True/Reconciled"), or
// "absent" when obj has none.
func Condition(obj status.Object, condType string) string {
	c := meta.FindStatusCondition(obj.GetConditions(), condType)
	if c == nil {
		return "absent"
	}
	return string(c.Status) + "/" + c.Reason
}

// ConditionsAre returns a check for harness.WaitForObject that reports whether the object's conditions
// hold want (Condition's "Status/Reason" or "absent", by condition type) and whether every condition,
// and status.observedGeneration, was set for the object's current generation. Instantiate it once per
// type:
//
//	var conditionsAre = optest.ConditionsAre[*v1alpha1.Memcached]
//
//	ready := map[string]string{status.Ready: "True/Reconciled", status.Reconciling: "absent", status.Stalled: "absent"}
//	harness.WaitForObject(t, c, key, mc, optest.Timeout, conditionsAre(ready))
func ConditionsAre[T StatusObject](want map[string]string) func(T) bool {
	return func(obj T) bool {
		for typ, w := range want {
			if Condition(obj, typ) != w {
				return false
			}
		}
		for _, c := range obj.GetConditions() {
			if c.ObservedGeneration != obj.GetGeneration() {
				return false
			}
		}
		return obj.GetObservedGeneration() == obj.GetGeneration()
	}
}

// IgnoreConditions returns a cmp option that ignores every field named Conditions or
// ObservedGeneration, so that a status can be compared without what ConditionsAre checks.
//
//	cmp.Diff(v1alpha1.MemcachedStatus{ReadyReplicas: 2}, mc.Status, optest.IgnoreConditions())
func IgnoreConditions() cmp.Option {
	return cmp.FilterPath(func(p cmp.Path) bool {
		switch p.Last().String() {
		case ".Conditions", ".ObservedGeneration":
			return true
		}
		return false
	}, cmp.Ignore())
}
