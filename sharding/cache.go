package sharding

import (
	"reflect"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ScopeCache sets the manager's cache options so that the informers of objs (the sharded type and its
// child kinds) list and watch only the objects labelled with this member, and the Lease informer only
// the ring's Leases in the Config's namespace. The API server filters: a replica caches and hears
// about its share only. Selectors already set for those kinds (childcache.Configure's) are kept and
// combined; call it before ctrl.NewManager.
//
//	opts := ctrl.Options{Scheme: scheme}
//	childcache.Configure(&opts.Cache, children...)
//	shardCfg.ScopeCache(&opts.Cache, append(children, &v1alpha1.Welcome{})...)
func (c Config) ScopeCache(opts *cache.Options, objs ...client.Object) {
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	mine, _ := labels.NewRequirement(Label(c.Ring), selection.Equals, []string{c.Member})
	for _, o := range objs {
		key, entry := entryFor(opts.ByObject, o)
		entry.Label = withRequirement(entry.Label, *mine)
		opts.ByObject[key] = entry
	}
	ring, _ := labels.NewRequirement(RingLabel, selection.Equals, []string{c.Ring})
	key, entry := entryFor(opts.ByObject, &coordinationv1.Lease{})
	entry.Label = withRequirement(entry.Label, *ring)
	entry.Namespaces = map[string]cache.Config{c.Namespace: {}}
	opts.ByObject[key] = entry
}

// entryFor returns the ByObject key already used for obj's type (so that one type has one entry) and
// its entry.
func entryFor(m map[client.Object]cache.ByObject, obj client.Object) (client.Object, cache.ByObject) {
	for k, v := range m {
		if reflect.TypeOf(k) == reflect.TypeOf(obj) {
			return k, v
		}
	}
	return obj, cache.ByObject{}
}

func withRequirement(sel labels.Selector, r labels.Requirement) labels.Selector {
	if sel == nil {
		sel = labels.NewSelector()
	}
	return sel.Add(r)
}
