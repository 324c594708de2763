package main

import (
	"encoding/json"
	"testing"
	"time"

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

// TestOrder checks that the methods take turns create, apply, apply, create over pairs of batches.
func TestOrder(t *testing.T) {
	var got []string
	for i := range 4 {
		got = append(got, order(i)...)
	}
	want := []string{"create", "apply", "apply", "create", "create", "apply", "apply", "create"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// TestReport checks that each method's cost is its total over its batches per object, not a mean of
// the batches' figures.
func TestReport(t *testing.T) {
	samples := []sample{
		{method: "create", apiServer: 300 * time.Millisecond, etcd: 30 * time.Millisecond, objects: 300},
		{method: "apply", apiServer: 600 * time.Millisecond, etcd: 90 * time.Millisecond, objects: 300},
		{method: "apply", apiServer: 900 * time.Millisecond, etcd: 90 * time.Millisecond, objects: 300},
		{method: "create", apiServer: 600 * time.Millisecond, etcd: 30 * time.Millisecond, objects: 300},
	}
	want := `
| per object (all measured batches) | create | apply | apply/create |
|---|---:|---:|---:|
| kube-apiserver CPU (ms) | 1.50 | 2.50 | 1.67 |
| etcd CPU (ms) | 0.10 | 0.30 | 3.00 |
`
	if diff := cmp.Diff(want, report(samples)); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}
