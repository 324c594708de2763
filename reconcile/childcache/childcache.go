package childcache

import (
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/ownership"
)

// Configure sets the manager's cache options (ctrl.Options.Cache) so that the cache holds only what a
// Convergo operator reads:
//
//   - no object keeps its managedFields (nothing in Convergo reads them; they are often half of an
//     object's size), and the cached objects share one copy of each label and annotation key (in
//     their metadata, pod templates and selectors), namespace, owner reference API version and kind,
//     and of the values that name an application, an owner's kind, group and namespace, or graph
//     nodes (the app.kubernetes.io labels but the instance, the tracking marks but the owner's UID
//     and name, the node and depends-on marks), instead of one per object;
//   - the informers of the child kinds given list and watch only objects carrying the tracking label
//     convergo.dev/owner-uid, which every child the Applier writes carries: the API server filters, so
//     objects of those kinds that are not a Convergo child cost neither memory nor events.
//
// Safety does not rest on the cache: an object the filtered cache does not show (an orphan under a
// child's name) is found by the create, which refuses to overwrite it, and is then read from the API
// server (see apply.Applier.Apply). Options already set for those kinds keep their namespaces and field
// selectors, and a label selector already set is combined with the tracking requirement; an existing
// DefaultTransform still runs after managedFields are dropped.
//
// The cache is the manager's: a controller in the same manager that needs every object of one of these
// kinds (not only Convergo's children) must not list that kind here, or must read through its own cache
// or the manager's API reader.
//
//	opts := ctrl.Options{Scheme: scheme}
//	childcache.Configure(&opts.Cache, &appsv1.Deployment{}, &corev1.Service{}, &corev1.ConfigMap{})
//	mgr, err := ctrl.NewManager(cfg, opts)
func Configure(opts *cache.Options, children ...client.Object) {
	next := opts.DefaultTransform
	strip := cache.TransformStripManagedFields()
	keys := &keyTable{}
	opts.DefaultTransform = func(in any) (any, error) {
		out, err := strip(in)
		if err == nil {
			out, err = keys.transform(out)
		}
		if err != nil || next == nil {
			return out, err
		}
		return next(out)
	}
	tracked, _ := labels.NewRequirement(ownership.OwnerUIDLabel, selection.Exists, nil)
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	for _, child := range children {
		key, entry := byObjectEntry(opts.ByObject, child)
		switch {
		case entry.Label != nil && hasRequirement(entry.Label, *tracked):
			continue // listed twice (two controllers of one manager)
		case entry.Label == nil && opts.DefaultLabelSelector != nil:
			entry.Label = opts.DefaultLabelSelector.Add(*tracked)
		case entry.Label == nil:
			entry.Label = labels.NewSelector().Add(*tracked)
		default:
			entry.Label = entry.Label.Add(*tracked)
		}
		opts.ByObject[key] = entry
	}
}

// byObjectEntry returns the key and entry of m for obj's type (a new key, obj, when there is none):
// the cache refuses two entries for one kind.
func byObjectEntry(m map[client.Object]cache.ByObject, obj client.Object) (client.Object, cache.ByObject) {
	for k, v := range m {
		if reflect.TypeOf(k) == reflect.TypeOf(obj) {
			return k, v
		}
	}
	return obj, cache.ByObject{}
}

func hasRequirement(sel labels.Selector, want labels.Requirement) bool {
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		if r.Equal(want) {
			return true
		}
	}
	return false
}

// Kinds returns the child kinds opts keeps to Convergo's children (those Configure was given), as new
// empty objects sorted by type name: the kinds a Reconciler should watch, so that they are declared
// once, where the cache is shaped.
//
//	reconcile.WithOwns(childcache.Kinds(opts.Cache)...)
func Kinds(opts cache.Options) []client.Object {
	tracked, _ := labels.NewRequirement(ownership.OwnerUIDLabel, selection.Exists, nil)
	var kinds []client.Object
	for k, v := range opts.ByObject {
		if v.Label != nil && hasRequirement(v.Label, *tracked) {
			kinds = append(kinds, reflect.New(reflect.TypeOf(k).Elem()).Interface().(client.Object))
		}
	}
	slices.SortFunc(kinds, func(a, b client.Object) int {
		return strings.Compare(reflect.TypeOf(a).String(), reflect.TypeOf(b).String())
	})
	return kinds
}
