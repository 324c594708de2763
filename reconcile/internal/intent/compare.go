package intent

import (
	"encoding/json"
	"reflect"
	"strconv"
)

// isSubset reports whether every field set in intent holds the same value in live, for an object
// without schema: maps key by key, lists as an ordered subsequence (elements added by other managers
// or by defaulting are allowed), numbers numerically and strings as written. It returns the path of
// the first difference. See isSubsetWith for objects whose kind has a schema.
//
// The intent of a typed object holds its quantities in the form the API server stores (see
// heldQuantity), so they compare as written too. The intent of an unstructured object does not say
// which strings are quantities: with quantities set, an intent string also matches its held form
// as a quantity ("1000m" matches "1"), but "1.1" does not match "1.10", nor "1024Mi" "1Gi".
func isSubset(intent, live any, quantities bool) (bool, string) {
	return isSubsetWith(intent, live, quantities, nil)
}

// isSubsetWith is isSubset following the merge semantics the kind's schema gives each list, as
// server-side apply does:
//
//   - atomic lists (a container's args and command, a ClusterRole's rules and their verbs,
//     tolerations): server-side apply replaces them whole, so the live list must hold exactly the
//     intent's elements, in order (each element compared as a subset, so fields the server defaults
//     inside an element are no drift); an element someone added is drift and is reverted;
//   - sets (listType=set): every intent element is present, in any order; others may be added;
//   - maps (listType=map, e.g. containers and env by name, ports by port and protocol): every intent
//     element is matched by its key fields, in any order; elements others added (an injected
//     sidecar, a foreign env var) are no drift;
//   - maps of free keys that are atomic (a Service's selector): no key beyond the intent's.
//
// Lists of kinds without a schema (custom resources) keep the ordered-subsequence rule: additions by
// others are never reverted there. ks nil means no schema.
func isSubsetWith(intent, live any, quantities bool, ks *kindSchema) (bool, string) {
	ok, path := comparison{quantities: quantities}.subset(intent, live, ks.rootType())
	if !ok {
		return false, pathOr(path)
	}
	return true, ""
}

// comparison is one isSubset run.
type comparison struct {
	quantities bool
}

// subset reports whether intent holds in live and, when not, the path of the first difference relative
// to them ("" for the values themselves). Paths are built on the way back, only for a difference: a
// comparison that holds builds none.
func (c comparison) subset(intent, live any, t typeAt) (bool, string) {
	switch iv := intent.(type) {
	case map[string]any:
		lv, ok := live.(map[string]any)
		if !ok {
			return false, ""
		}
		for k, e := range iv {
			l, found := lv[k]
			if !found {
				if e == nil {
					continue
				}
				return false, "." + k
			}
			if ok, p := c.subset(e, l, t.field(k)); !ok {
				return false, "." + k + p
			}
		}
		if t.atomicMap() {
			for k := range lv {
				if _, declared := iv[k]; !declared {
					return false, "." + k
				}
			}
		}
		return true, ""
	case []any:
		lv, ok := live.([]any)
		if !ok {
			return false, ""
		}
		return c.list(iv, lv, t)
	case nil:
		if live == nil {
			return true, ""
		}
		return false, ""
	}
	if c.scalarEqual(intent, live) {
		return true, ""
	}
	return false, ""
}

// index is the path segment of list element i.
func index(i int) string { return "[" + strconv.Itoa(i) + "]" }

// list compares a list by its merge semantics (see isSubsetWith); the path is relative, as subset's.
func (c comparison) list(iv, lv []any, t typeAt) (bool, string) {
	kind, keys, elem := t.list()
	switch kind {
	case listAtomic:
		for i, e := range iv {
			if i >= len(lv) {
				return false, index(i)
			}
			if ok, p := c.subset(e, lv[i], elem); !ok {
				return false, index(i) + p
			}
		}
		if len(lv) > len(iv) {
			return false, index(len(iv))
		}
		return true, ""
	case listSet, listMap:
		for i, e := range iv {
			if !c.anyMatches(e, lv, keys, elem) {
				return false, index(i)
			}
		}
		return true, ""
	}
	j := 0
	for i, e := range iv {
		matched := false
		for j < len(lv) {
			ok, _ := c.subset(e, lv[j], elem)
			j++
			if ok {
				matched = true
				break
			}
		}
		if !matched {
			return false, index(i)
		}
	}
	return true, ""
}

// anyMatches reports whether some live element holds the intent element e: for a map list, the one
// with e's key values (the key fields e sets; a key the server defaults, such as a port's protocol,
// may be left out) must hold e as a subset; for a set, one must equal it.
func (c comparison) anyMatches(e any, lv []any, keys []string, elem typeAt) bool {
	em, _ := e.(map[string]any)
	for _, l := range lv {
		if len(keys) > 0 && em != nil {
			lm, ok := l.(map[string]any)
			if !ok || !c.sameKeys(em, lm, keys) {
				continue
			}
		}
		if ok, _ := c.subset(e, l, elem); ok {
			return true
		}
	}
	return false
}

// sameKeys reports whether live element l has the key values intent element e sets.
func (c comparison) sameKeys(e, l map[string]any, keys []string) bool {
	for _, k := range keys {
		ev, set := e[k]
		if !set {
			continue
		}
		if lvk, found := l[k]; !found || !c.scalarEqual(ev, lvk) {
			return false
		}
	}
	return true
}

func pathOr(p string) string {
	if p == "" {
		return "."
	}
	return p
}

func (c comparison) scalarEqual(a, b any) bool {
	if af, ok := toFloat(a); ok {
		bf, ok := toFloat(b)
		if !ok {
			return false
		}
		if ai, ok := toInt(a); ok {
			if bi, ok := toInt(b); ok {
				return ai == bi
			}
		}
		return af == bf
	}
	switch a := a.(type) {
	case string:
		b, ok := b.(string)
		if !ok {
			return false
		}
		return a == b || c.quantities && heldQuantity(a) == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	}
	return reflect.DeepEqual(a, b)
}

func toInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case json.Number:
		i, err := v.Int64()
		return i, err == nil
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case int32:
		return float64(v), true
	case float64:
		return v, true
	case float32:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}
