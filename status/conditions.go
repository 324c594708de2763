package status

import (
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Condition types with kstatus meaning.
//
// Ready is the summary condition: True when the object is fully reconciled for its current generation.
// Reconciling and Stalled are abnormal-true conditions: they are present (True) only while the
// controller is working towards the desired state (Reconciling) or has given up until something changes
// (Stalled). They are never both True, and never True together with Ready=True.
const (
	// Ready is True when the object is fully reconciled for its current generation.
	Ready = "Ready"
	// Reconciling is True (and otherwise absent) while the controller works towards the desired state.
	Reconciling = "Reconciling"
	// Stalled is True (and otherwise absent) while the controller cannot make progress without a change.
	Stalled = "Stalled"
)

// maxMessageLength is the longest message the metav1.Condition schema accepts.
const maxMessageLength = 32768

// Object is an API object whose status carries a list of metav1.Condition.
type Object interface {
	client.Object
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
}

// observedGenerationObject is implemented by objects whose top-level status.observedGeneration has
// accessors (GetObservedGeneration, SetObservedGeneration); an int64 field Status.ObservedGeneration
// is found by reflection without them.
type observedGenerationObject interface {
	GetObservedGeneration() int64
	SetObservedGeneration(int64)
}

// now is the clock used for lastTransitionTime. It is a variable only so that tests can pin it; production
// code never changes it. Times are truncated to seconds, the precision the API serializes.
var now = func() time.Time { return time.Now() }

func transitionTime() metav1.Time {
	return metav1.NewTime(now().Truncate(time.Second))
}

// Set adds or updates the condition c.Type on obj and reports whether anything changed.
//
//   - c.ObservedGeneration is replaced by obj's generation; the top-level status.observedGeneration is set
//     too where the type has one (an int64 field Status.ObservedGeneration, or accessors for it).
//   - lastTransitionTime changes only when the status changes (or the condition is new). It is c's
//     LastTransitionTime when set, else the current time.
//   - Existing conditions keep their order; new ones are appended.
//   - kstatus rules are enforced: Ready=True removes Reconciling and Stalled; Reconciling=True removes
//     Stalled, and Stalled=True removes Reconciling; either of them True turns a Ready=True into
//     Ready=False with the same reason and message. Reconciling or Stalled with a status other than True
//     are abnormal-true conditions that no longer apply, so they are removed.
//
// A condition with an empty type is ignored.
func Set(obj Object, c metav1.Condition) bool {
	if c.Type == "" {
		return false
	}
	if (c.Type == Reconciling || c.Type == Stalled) && c.Status != metav1.ConditionTrue {
		changed := Remove(obj, c.Type)
		return stampObservedGeneration(obj) || changed
	}
	changed := set(obj, c)
	if c.Status == metav1.ConditionTrue {
		switch c.Type {
		case Ready:
			changed = Remove(obj, Reconciling) || changed
			changed = Remove(obj, Stalled) || changed
		case Reconciling, Stalled:
			other := Stalled
			if c.Type == Stalled {
				other = Reconciling
			}
			changed = Remove(obj, other) || changed
			if isTrue(obj, Ready) {
				changed = set(obj, metav1.Condition{
					Type: Ready, Status: metav1.ConditionFalse, Reason: c.Reason, Message: c.Message,
				}) || changed
			}
		}
	}
	return stampObservedGeneration(obj) || changed
}

// set writes one condition without kstatus rules.
func set(obj Object, c metav1.Condition) bool {
	c.ObservedGeneration = obj.GetGeneration()
	c.Message = truncate(c.Message)
	conds := obj.GetConditions()
	for i := range conds {
		cur := &conds[i]
		if cur.Type != c.Type {
			continue
		}
		if cur.Status != c.Status {
			if c.LastTransitionTime.IsZero() {
				c.LastTransitionTime = transitionTime()
			}
		} else {
			c.LastTransitionTime = cur.LastTransitionTime
		}
		if *cur == c {
			return false
		}
		updated := append([]metav1.Condition(nil), conds...)
		updated[i] = c
		obj.SetConditions(updated)
		return true
	}
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = transitionTime()
	}
	updated := append(append(make([]metav1.Condition, 0, len(conds)+1), conds...), c)
	obj.SetConditions(updated)
	return true
}

// truncate shortens a message to the length the condition schema allows, on a rune boundary.
func truncate(msg string) string {
	if len(msg) <= maxMessageLength {
		return msg
	}
	cut := maxMessageLength - len("...")
	for cut > 0 && !utf8Start(msg[cut]) {
		cut--
	}
	return msg[:cut] + "..."
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Remove deletes the condition condType from obj and reports whether it was present.
func Remove(obj Object, condType string) bool {
	conds := obj.GetConditions()
	for i := range conds {
		if conds[i].Type == condType {
			updated := append(append(make([]metav1.Condition, 0, len(conds)-1), conds[:i]...), conds[i+1:]...)
			if len(updated) == 0 {
				updated = nil
			}
			obj.SetConditions(updated)
			return true
		}
	}
	return false
}

// MarkReady records that obj is fully reconciled: Ready=True, and Reconciling and Stalled removed.
func MarkReady(obj Object, reason, message string) bool {
	return Set(obj, metav1.Condition{Type: Ready, Status: metav1.ConditionTrue, Reason: reason, Message: message})
}

// MarkReconciling records that the controller is working towards the desired state: Reconciling=True,
// Ready=False with the same reason and message, and Stalled removed.
func MarkReconciling(obj Object, reason, message string) bool {
	changed := Set(obj, metav1.Condition{Type: Reconciling, Status: metav1.ConditionTrue, Reason: reason, Message: message})
	return Set(obj, metav1.Condition{Type: Ready, Status: metav1.ConditionFalse, Reason: reason, Message: message}) || changed
}

// MarkStalled records that the controller cannot make progress until something changes (typically the
// spec): Stalled=True, Ready=False with the same reason and message, and Reconciling removed.
func MarkStalled(obj Object, reason, message string) bool {
	changed := Set(obj, metav1.Condition{Type: Stalled, Status: metav1.ConditionTrue, Reason: reason, Message: message})
	return Set(obj, metav1.Condition{Type: Ready, Status: metav1.ConditionFalse, Reason: reason, Message: message}) || changed
}

// lookup returns a pointer to the condition condType inside obj's own conditions slice, or nil. It
// does not allocate; callers in this package only read through it and never hand it out.
func lookup(obj Object, condType string) *metav1.Condition {
	conds := obj.GetConditions()
	for i := range conds {
		if conds[i].Type == condType {
			return &conds[i]
		}
	}
	return nil
}

// isTrue reports whether obj has condition condType with status True.
func isTrue(obj Object, condType string) bool { return hasStatus(obj, condType, metav1.ConditionTrue) }

func hasStatus(obj Object, condType string, s metav1.ConditionStatus) bool {
	c := lookup(obj, condType)
	return c != nil && c.Status == s
}

// IsReady reports whether obj is Ready for its current generation: Ready=True and observed at obj's
// generation. A Ready=True left over from an older generation does not count.
func IsReady(obj Object) bool {
	c := lookup(obj, Ready)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == obj.GetGeneration()
}

// stampObservedGeneration copies obj's generation into status.observedGeneration where the type has one,
// and reports whether that changed it.
func stampObservedGeneration(obj Object) bool {
	gen := obj.GetGeneration()
	if o, ok := obj.(observedGenerationObject); ok {
		if o.GetObservedGeneration() == gen {
			return false
		}
		o.SetObservedGeneration(gen)
		return true
	}
	f, ok := observedGenerationField(obj)
	if !ok || f.Int() == gen {
		return false
	}
	f.SetInt(gen)
	return true
}

// observedGenerationField finds a settable int64 field Status.ObservedGeneration in a pointer to a struct.
func observedGenerationField(obj client.Object) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	st := v.Elem().FieldByName("Status")
	if st.Kind() == reflect.Pointer {
		if st.IsNil() {
			return reflect.Value{}, false
		}
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f := st.FieldByName("ObservedGeneration")
	if !f.IsValid() || f.Kind() != reflect.Int64 || !f.CanSet() {
		return reflect.Value{}, false
	}
	return f, true
}
