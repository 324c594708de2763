package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper counts the RESTMapping questions that reach it.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

func TestMappingMemo(t *testing.T) {
	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	namespace := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	type question struct {
		gk       schema.GroupKind
		versions []string
	}
	tests := []struct {
		name      string
		questions []question
		// wantScopes are the answers' scopes ("" for an error), wantAsked how many questions reached the
		// wrapped mapper.
		wantScopes []meta.RESTScopeName
		wantAsked  int
	}{
		{
			name: "one version is asked once",
			questions: []question{
				{deployment.GroupKind(), []string{"v1"}}, {deployment.GroupKind(), []string{"v1"}}, {deployment.GroupKind(), []string{"v1"}},
			},
			wantScopes: []meta.RESTScopeName{meta.RESTScopeNameNamespace, meta.RESTScopeNameNamespace, meta.RESTScopeNameNamespace},
			wantAsked:  1,
		},
		{
			name:       "kinds and versions are remembered apart",
			questions:  []question{{deployment.GroupKind(), []string{"v1"}}, {namespace.GroupKind(), []string{"v1"}}, {namespace.GroupKind(), []string{"v1"}}},
			wantScopes: []meta.RESTScopeName{meta.RESTScopeNameNamespace, meta.RESTScopeNameRoot, meta.RESTScopeNameRoot},
			wantAsked:  2,
		},
		{
			name:       "failures are asked again",
			questions:  []question{{deployment.GroupKind(), []string{"v2"}}, {deployment.GroupKind(), []string{"v2"}}},
			wantScopes: []meta.RESTScopeName{"", ""},
			wantAsked:  2,
		},
		{
			name:       "several versions go to the wrapped mapper",
			questions:  []question{{deployment.GroupKind(), []string{"v1", "v2"}}, {deployment.GroupKind(), []string{"v1", "v2"}}, {deployment.GroupKind(), []string{"v2", "v1"}}},
			wantScopes: []meta.RESTScopeName{meta.RESTScopeNameNamespace, meta.RESTScopeNameNamespace, meta.RESTScopeNameNamespace},
			wantAsked:  3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := meta.NewDefaultRESTMapper(nil)
			base.Add(deployment, meta.RESTScopeNamespace)
			base.Add(namespace, meta.RESTScopeRoot)
			counting := &countingMapper{RESTMapper: base}
			memo := newMappingMemo(counting)
			var scopes []meta.RESTScopeName
			for _, q := range tt.questions {
				m, err := memo.RESTMapping(q.gk, q.versions...)
				if err != nil {
					scopes = append(scopes, "")
					continue
				}
				scopes = append(scopes, m.Scope.Name())
				m.Scope = nil // a caller changing its answer changes no later answer
			}
			if diff := cmp.Diff(tt.wantScopes, scopes); diff != "" {
				t.Errorf("scopes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAsked, counting.asked); diff != "" {
				t.Errorf("questions reaching the wrapped mapper (-want +got):\n%s", diff)
			}
		})
	}
}
