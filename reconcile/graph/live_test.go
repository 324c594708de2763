package graph

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLive: the live child typed, or false when absent, not applied or of another type.
func TestLive(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "page"}}
	res := &Result{Children: []ChildResult{
		{Name: "page", Object: cm, Applied: true},
		{Name: "deployment"}, // waits for its dependencies
	}}
	type got struct {
		Name string
		OK   bool
	}
	cases := map[string]struct {
		get  func() got
		want got
	}{
		"applied child of its type": {get: func() got { c, ok := Live[*corev1.ConfigMap](res, "page"); return got{c.GetName(), ok} },
			want: got{"page", true}},
		"another type":  {get: func() got { _, ok := Live[*corev1.Secret](res, "page"); return got{"", ok} }},
		"not applied":   {get: func() got { _, ok := Live[*appsv1.Deployment](res, "deployment"); return got{"", ok} }},
		"no such child": {get: func() got { _, ok := Live[*corev1.Service](res, "service"); return got{"", ok} }},
		"no result":     {get: func() got { _, ok := Live[*corev1.ConfigMap](nil, "page"); return got{"", ok} }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.get()); diff != "" {
				t.Errorf("Live (-want +got):\n%s", diff)
			}
		})
	}
}
