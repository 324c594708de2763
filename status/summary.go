package status

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Summary names the sub-conditions Summarize derives Ready from. The zero value summarizes nothing but
// Reconciling and Stalled.
type Summary struct {
	// Conditions are the sub-condition types, in priority order: when several are not ready, the first one
	// listed explains Ready. Positive polarity (True is good) unless also listed in NegativePolarity.
	Conditions []string
	// NegativePolarity are sub-condition types for which True is bad (for example "Degraded"). An absent
	// negative-polarity condition counts as good. Types listed here but not in Conditions are considered
	// after Conditions.
	NegativePolarity []string
	// Reason and Message are used for Ready=True; defaults "Succeeded" and "all conditions are ready".
	Reason, Message string
}

// Summarize derives Ready from obj's sub-conditions and reports whether anything changed:
//
//   - Stalled=True: Ready=False with Stalled's reason and message.
//   - else the first sub-condition that is not good decides: a positive condition that is False (or a
//     negative one that is True) gives Ready=False; one that is Unknown, absent, or observed at an older
//     generation than obj's gives Ready=Unknown. Reason is the sub-condition's (or "<Type>NotReported" /
//     "<Type>Outdated"), message "<Type>: <message>".
//   - else Reconciling=True: Ready=False with Reconciling's reason and message.
//   - else Ready=True with s.Reason and s.Message.
//
// Summarize never sets Reconciling or Stalled, so the kstatus rules hold whatever the sub-conditions say.
func Summarize(obj Object, s Summary) bool {
	if c := lookup(obj, Stalled); c != nil && c.Status == metav1.ConditionTrue {
		return Set(obj, metav1.Condition{Type: Ready, Status: metav1.ConditionFalse, Reason: c.Reason, Message: c.Message})
	}
	for _, t := range summaryTypes(s) {
		negative := slices.Contains(s.NegativePolarity, t)
		if st, reason, msg, good := judge(obj, t, negative); !good {
			return Set(obj, metav1.Condition{Type: Ready, Status: st, Reason: reason, Message: msg})
		}
	}
	if c := lookup(obj, Reconciling); c != nil && c.Status == metav1.ConditionTrue {
		return Set(obj, metav1.Condition{Type: Ready, Status: metav1.ConditionFalse, Reason: c.Reason, Message: c.Message})
	}
	reason, msg := s.Reason, s.Message
	if reason == "" {
		reason = "Succeeded"
	}
	if msg == "" {
		msg = "all conditions are ready"
	}
	return Set(obj, metav1.Condition{Type: Ready, Status: metav1.ConditionTrue, Reason: reason, Message: msg})
}

// summaryTypes lists the sub-condition types in priority order without duplicates, never Ready itself.
func summaryTypes(s Summary) []string {
	var out []string
	for _, t := range slices.Concat(s.Conditions, s.NegativePolarity) {
		if t == "" || t == Ready || slices.Contains(out, t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// judge reports whether sub-condition t of obj is good and, if not, the Ready status, reason and message
// it implies.
func judge(obj Object, t string, negative bool) (metav1.ConditionStatus, string, string, bool) {
	c := lookup(obj, t)
	if c == nil {
		if negative {
			return "", "", "", true
		}
		return metav1.ConditionUnknown, reasonFor(t, "NotReported"), fmt.Sprintf("%s: not reported yet", t), false
	}
	if c.ObservedGeneration != 0 && c.ObservedGeneration < obj.GetGeneration() {
		return metav1.ConditionUnknown, reasonFor(t, "Outdated"),
			fmt.Sprintf("%s: observed generation %d, current %d", t, c.ObservedGeneration, obj.GetGeneration()), false
	}
	bad := metav1.ConditionFalse
	if negative {
		bad = metav1.ConditionTrue
	}
	switch c.Status {
	case bad:
		return metav1.ConditionFalse, orReason(c.Reason, t), prefixed(t, c.Message), false
	case metav1.ConditionTrue, metav1.ConditionFalse:
		return "", "", "", true
	default:
		return metav1.ConditionUnknown, orReason(c.Reason, t), prefixed(t, c.Message), false
	}
}

func orReason(reason, t string) string {
	if reason != "" {
		return reason
	}
	return reasonFor(t, "NotReady")
}

// reasonFor builds a reason from a condition type and a suffix, keeping only the characters a condition
// reason may hold (a type may be domain-prefixed, such as "example.com/Synced").
func reasonFor(t, suffix string) string {
	var b []byte
	for i := 0; i < len(t); i++ {
		ch := t[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || (len(b) > 0 && (ch >= '0' && ch <= '9' || ch == '_')) {
			b = append(b, ch)
		}
	}
	return string(b) + suffix
}

func prefixed(t, msg string) string {
	if msg == "" {
		return t
	}
	return t + ": " + msg
}
