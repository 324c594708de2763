package reconcile

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendJSON appends v, a value of an intent (maps with string keys, lists, strings, booleans, whole
// and other numbers, nil), to b exactly as json.Marshal writes it: keys sorted, strings escaped the
// same way. It walks maps and lists itself and writes plain strings and whole numbers directly; other
// values (strings json escapes, other numbers, other types) go through json.Marshal. IntentHash spent
// most of its time in json.Marshal's reflection over maps; the bytes, and so the hashes stamped on
// existing objects, stay the same.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case string:
		return appendJSONString(b, v)
	case map[string]any:
		if v == nil {
			return append(b, "null"...), nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSONString(b, k); err != nil {
				return nil, err
			}
			b = append(b, ':')
			if b, err = appendJSON(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return append(b, data...), nil
}

// appendJSONString appends s as a JSON string: directly when it holds only printable ASCII that
// json.Marshal does not escape, else through json.Marshal.
func appendJSONString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			data, err := json.Marshal(s)
			if err != nil {
				return nil, fmt.Errorf("encode string: %w", err)
			}
			return append(b, data...), nil
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}
