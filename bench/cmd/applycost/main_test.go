package main

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestApplyBody checks that the apply body holds only set fields: no status, no nulls, no empty maps.
func TestApplyBody(t *testing.T) {
	for _, obj := range children("ns", "w0001") {
		body, err := applyBody(obj)
		if err != nil {
			t.Fatal(err)
		}
		var content map[string]any
		if err := json.Unmarshal(body, &content); err != nil {
			t.Fatal(err)
		}
		var bad []string
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch v := v.(type) {
			case nil:
				bad = append(bad, path+": null")
			case map[string]any:
				if len(v) == 0 {
					bad = append(bad, path+": {}")
				}
				for k, e := range v {
					walk(path+"."+k, e)
				}
			case []any:
				for _, e := range v {
					walk(path+"[]", e)
				}
			}
		}
		walk(obj.GetObjectKind().GroupVersionKind().Kind, content)
		if _, ok := content["status"]; ok {
			bad = append(bad, "status")
		}
		if diff := cmp.Diff([]string(nil), bad); diff != "" {
			t.Errorf("%s: fields an intent leaves out (-want +got):\n%s", content["kind"], diff)
		}
	}
}
