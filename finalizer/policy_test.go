package finalizer_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/convergo-dev/convergo/finalizer"
)

func TestAdmissionPolicy(t *testing.T) {
	welcomes := schema.GroupResource{Group: "web.convergo.dev", Resource: "welcomes"}
	cases := map[string]struct {
		finalizer string
		resources []schema.GroupResource
		wantErr   string
	}{
		"one resource":         {finalizer: "web.convergo.dev/finalizer", resources: []schema.GroupResource{welcomes}},
		"two resources":        {finalizer: "web.convergo.dev/finalizer", resources: []schema.GroupResource{welcomes, {Resource: "configmaps"}}},
		"no resource":          {finalizer: "web.convergo.dev/finalizer", wantErr: "name at least one resource"},
		"a subresource":        {finalizer: "web.convergo.dev/finalizer", resources: []schema.GroupResource{{Group: "web.convergo.dev", Resource: "welcomes/status"}}, wantErr: "is not a resource"},
		"not a qualified name": {finalizer: `web.convergo.dev/"x"`, resources: []schema.GroupResource{welcomes}, wantErr: "finalizer"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := finalizer.AdmissionPolicy(tc.finalizer, tc.resources...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := p.Name, "finalizer.web.convergo.dev.finalizer"; got != want {
				t.Errorf("name = %q, want %q", got, want)
			}
			var got []string
			for _, r := range p.Spec.MatchConstraints.ResourceRules {
				got = append(got, strings.Join(r.APIGroups, ",")+"/"+strings.Join(r.Resources, ",")+":"+string(r.Operations[0]))
			}
			var want []string
			for _, gr := range tc.resources {
				want = append(want, gr.Group+"/"+gr.Resource+":CREATE")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if fp := p.Spec.FailurePolicy; fp == nil || *fp != admissionregistrationv1.Ignore {
				t.Errorf("failure policy = %v, want Ignore (Ensure adds the finalizer then)", fp)
			}
			if expr := p.Spec.Mutations[0].JSONPatch.Expression; !strings.Contains(expr, `"`+tc.finalizer+`"`) {
				t.Errorf("expression %q does not name the finalizer", expr)
			}
		})
	}
}

func TestAdmissionPolicyBinding(t *testing.T) {
	p, err := finalizer.AdmissionPolicy("web.convergo.dev/finalizer", schema.GroupResource{Group: "web.convergo.dev", Resource: "welcomes"})
	if err != nil {
		t.Fatal(err)
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "web"}}
	cases := map[string]struct {
		namespaces *metav1.LabelSelector
		want       *admissionregistrationv1.MatchResources
	}{
		"everywhere":      {},
		"some namespaces": {namespaces: sel, want: &admissionregistrationv1.MatchResources{NamespaceSelector: sel}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := finalizer.AdmissionPolicyBinding(p, tc.namespaces)
			if b.Name != p.Name || b.Spec.PolicyName != p.Name {
				t.Errorf("binding %q for policy %q, want both %q", b.Name, b.Spec.PolicyName, p.Name)
			}
			if diff := cmp.Diff(tc.want, b.Spec.MatchResources); diff != "" {
				t.Errorf("match resources (-want +got):\n%s", diff)
			}
		})
	}
}
