package reconcile

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAppendJSONIsJSONMarshal(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{name: "nil", v: nil},
		{name: "scalars", v: map[string]any{"b": true, "f": false, "i": int64(-42), "s": "web-1", "n": nil}},
		{name: "keys sorted bytewise", v: map[string]any{"b": 1, "B": 2, "a": 3, "_": 4, "aa": 5, "é": 6}},
		{name: "strings json escapes", v: []any{`q"uote`, `back\slash`, "<html>&", "tab\tnl\nbs\b", "\x01", "é", "\u2028", "\xff"}},
		{name: "other numbers", v: []any{1.5, 1e21, 1e-7, 0.0, float64(3), json.Number("12"), int(7), uint8(8)}},
		{name: "nil map and list", v: map[string]any{"m": map[string]any(nil), "l": []any(nil), "e": []any{}, "o": map[string]any{}}},
		{name: "other types", v: map[string]any{"ss": []string{"a", "<"}, "ms": map[string]string{"z": "1", "a": "2"}}},
		{name: "nested", v: map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80), "name": "http"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendJSON(nil, tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Fatalf("appendJSON (-json.Marshal +got):\n%s", diff)
			}
		})
	}
}

func TestAppendJSONRefusesWhatJSONRefuses(t *testing.T) {
	if _, err := appendJSON(nil, map[string]any{"x": math.Inf(1)}); err == nil {
		t.Fatal("appendJSON of an infinite number returned no error, as json.Marshal does")
	}
}
