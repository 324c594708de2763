package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/convergo-dev/convergo/reconcile/graph"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/convergo-dev/convergo/ownership"
)

// maxParallelLists bounds how many list requests the tree sends at once.
const maxParallelLists = 8

// cluster reads owners and their children from an API server.
type cluster struct {
	discovery discovery.CachedDiscoveryInterfaceWithContext
	mapper    meta.RESTMapperWithContext
	dynamic   dynamic.Interface
	metadata  metadata.Interface
	// warn reports what the tree leaves out (a resource it cannot list) without failing.
	warn func(format string, args ...any)
}

// newCluster returns a cluster reading through cfg. Its rate limit is kubectl's, not client-go's
// default, since a tree lists every resource once.
func newCluster(cfg *rest.Config, warn func(format string, args ...any)) (*cluster, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 300
	// The API server's warnings reach the user through warn, not client-go's log; the lists of every
	// resource, which name deprecated ones too (v1 Endpoints, v1 ComponentStatus), warn of nothing the
	// user asked for, so theirs are dropped.
	cfg.WarningHandler = warningHandler(warn)
	scan := rest.CopyConfig(cfg)
	scan.WarningHandler = rest.NoWarnings{}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	cached := memory.NewMemCacheClientWithContext(dc)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	md, err := metadata.NewForConfig(scan)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	mapper := restmapper.NewShortcutExpanderWithContext(restmapper.NewDeferredDiscoveryRESTMapperWithContext(cached), cached,
		func(msg string) { warn("%s", msg) })
	return &cluster{discovery: cached, mapper: mapper, dynamic: dyn, metadata: md, warn: warn}, nil
}

// mapping resolves a resource as kubectl takes it: plural, singular or short name, optionally
// qualified by version and group ("welcomes.v1alpha1.web.convergo.dev", "welcomes.web.convergo.dev").
func (c *cluster) mapping(ctx context.Context, resource string) (*meta.RESTMapping, error) {
	fullySpecified, gr := schema.ParseResourceArg(strings.ToLower(resource))
	var gvk schema.GroupVersionKind
	if fullySpecified != nil {
		gvk, _ = c.mapper.KindForWithContext(ctx, *fullySpecified)
	}
	if gvk.Empty() {
		var err error
		if gvk, err = c.mapper.KindForWithContext(ctx, gr.WithVersion("")); meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("resource %q: the server has no such resource (kubectl api-resources lists those it has)", resource)
		} else if err != nil {
			return nil, fmt.Errorf("resource %q: %w", resource, err)
		}
	}
	m, err := c.mapper.RESTMappingWithContext(ctx, gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("resource %q: %w", resource, err)
	}
	return m, nil
}

// warningHandler passes the API server's warnings to warn.
type warningHandler func(format string, args ...any)

// HandleWarningHeader passes one warning to h.
func (h warningHandler) HandleWarningHeader(code int, _ string, text string) {
	if code == 299 && text != "" {
		h("warning: %s", text)
	}
}

// tree reads the object name of mapping's resource (in namespace, when namespaced) and its tracked
// children.
func (c *cluster) tree(ctx context.Context, m *meta.RESTMapping, namespace, name string) (*Tree, error) {
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		namespace = ""
	}
	obj, err := c.dynamic.Resource(m.Resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", m.GroupVersionKind.Kind, namespacedName(namespace, name), err)
	}
	t := &Tree{Owner: ownerOf(obj), Children: []Child{}}
	live, err := c.children(ctx, obj.GetUID(), namespace)
	if err != nil {
		return nil, err
	}
	for _, child := range live {
		t.Children = append(t.Children, childOf(child))
	}
	t.Children = inGraphOrder(t.Children)
	recorded, err := graph.RecordedExternal(obj)
	if err != nil {
		return nil, err
	}
	for _, r := range recorded {
		t.External = append(t.External, External{Node: r.Node, Kind: r.Kind, ID: r.ID, Keep: r.Keep})
	}
	return t, nil
}

// ownerOf describes obj and its Ready condition.
func ownerOf(obj *unstructured.Unstructured) Owner {
	o := Owner{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID())}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, item := range conditions {
		if m, ok := item.(map[string]any); ok && m["type"] == "Ready" {
			o.Ready = &Condition{}
			o.Ready.Status, _ = m["status"].(string)
			o.Ready.Reason, _ = m["reason"].(string)
			o.Ready.Message, _ = m["message"].(string)
		}
	}
	return o
}

// children returns the live objects tracked as uid's children (see ownership.TrackedOwner), of every
// resource the server offers for listing (in its preferred version): one metadata-only list per
// resource by the label, across namespaces (in namespace alone when listing across them is
// forbidden), then one read per match. The resources it cannot list are named in warnings.
func (c *cluster) children(ctx context.Context, uid types.UID, namespace string) ([]*unstructured.Unstructured, error) {
	lists, err := discovery.ServerPreferredResourcesWithContext(ctx, c.discovery)
	if err != nil {
		if !discovery.IsGroupDiscoveryFailedError(err) || len(lists) == 0 {
			return nil, fmt.Errorf("discover resources: %w", err)
		}
		c.warn("some API groups are not served, their objects are not shown: %v", err)
	}
	var resources []resource
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "get") {
				continue
			}
			resources = append(resources, resource{gvr: gv.WithResource(r.Name), namespaced: r.Namespaced})
		}
	}
	selector := metav1.ListOptions{LabelSelector: ownership.OwnerUIDLabel + "=" + string(uid)}
	var (
		mu        sync.Mutex
		found     []*unstructured.Unstructured
		seen      = map[types.UID]bool{}
		errs      []error
		notListed []string
		slots     = make(chan struct{}, maxParallelLists)
		workers   sync.WaitGroup
	)
	for _, r := range resources {
		workers.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			objs, err := c.matching(ctx, r, namespace, selector)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, errNotListed):
				notListed = append(notListed, r.gvr.GroupResource().String())
			case err != nil:
				errs = append(errs, err)
			}
			for _, o := range objs {
				if !seen[o.GetUID()] { // a resource served by two groups (events) lists its objects twice
					seen[o.GetUID()] = true
					found = append(found, o)
				}
			}
		})
	}
	workers.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("find children: %w", err)
	}
	for _, err := range errs { // one API that fails (an aggregated API that is down) hides only its objects
		c.warn("%v; its objects are not shown", err)
	}
	if len(notListed) > 0 {
		slices.Sort(notListed)
		c.warn("the objects of %d resources you may not list or read are not shown: %s", len(notListed), strings.Join(notListed, ", "))
	}
	return found, nil
}

// errNotListed is returned by matching for a resource the user may not list (or that the server does
// not list after all).
var errNotListed = errors.New("resource not listed")

// resource is one resource the tree lists.
type resource struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// matching lists r's objects matching selector, metadata only, and reads each match that is tracked
// (not only labelled). A resource the user may not list or read, or the server does not list after
// all, is errNotListed.
func (c *cluster) matching(ctx context.Context, r resource, namespace string, selector metav1.ListOptions) ([]*unstructured.Unstructured, error) {
	list, err := c.metadata.Resource(r.gvr).Namespace(metav1.NamespaceAll).List(ctx, selector)
	if apierrors.IsForbidden(err) && r.namespaced && namespace != "" {
		list, err = c.metadata.Resource(r.gvr).Namespace(namespace).List(ctx, selector)
	}
	switch {
	case apierrors.IsForbidden(err), apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err):
		return nil, errNotListed
	case err != nil:
		return nil, fmt.Errorf("list %s: %w", r.gvr.GroupResource(), err)
	}
	var out []*unstructured.Unstructured
	for _, item := range list.Items {
		// The label alone is not enough: the endpoints controller copies a Service's labels to its
		// Endpoints and EndpointSlices. What Convergo tracked also carries the owner's name.
		if _, tracked := ownership.TrackedOwner(&item); !tracked {
			continue
		}
		obj, err := c.dynamic.Resource(r.gvr).Namespace(item.Namespace).Get(ctx, item.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue // deleted since the list
		case apierrors.IsForbidden(err):
			return nil, errNotListed
		case err != nil:
			return nil, fmt.Errorf("get %s %s: %w", r.gvr.GroupResource(), namespacedName(item.Namespace, item.Name), err)
		case obj.GetUID() != item.UID:
			continue // replaced since the list
		}
		out = append(out, obj)
	}
	return out, nil
}
