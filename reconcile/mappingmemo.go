package reconcile

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// mappingMemo is a RESTMapper that remembers the mappings it found, for one version each, and passes
// every other question to the mapper it wraps.
//
// A cache restricted to namespaces (cache.Options.DefaultNamespaces) asks its mapper on every Get and
// List whether the kind is namespaced. controller-runtime's mapper answers by walking every group it
// knows, which took more CPU than the read itself: 6% of a manager's restart. A mapping found once
// stays true for as long as the kind's version is served, which is what controller-runtime's mapper
// assumes as well (it reloads a group only when a kind or version is missing). Failures are not
// remembered, so a kind installed later is found.
type mappingMemo struct {
	meta.RESTMapper

	mu    sync.RWMutex
	found map[mappingKey]meta.RESTMapping
}

// mappingKey is a question RESTMapping answers: a kind in one version.
type mappingKey struct {
	gk      schema.GroupKind
	version string
}

// newMappingMemo wraps m.
func newMappingMemo(m meta.RESTMapper) *mappingMemo {
	return &mappingMemo{RESTMapper: m, found: map[mappingKey]meta.RESTMapping{}}
}

// RESTMapping returns the mapping of gk in versions: a copy of the one found before when a single
// version is asked, else the wrapped mapper's answer.
func (m *mappingMemo) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	key := mappingKey{gk: gk, version: versions[0]}
	m.mu.RLock()
	found, ok := m.found[key]
	m.mu.RUnlock()
	if ok {
		return &found, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.found[key] = *mapping
	m.mu.Unlock()
	return mapping, nil
}
