package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// WithConnection lets the Applier send its DELETE requests itself over the manager's connection
// (mgr.GetConfig(), mgr.GetHTTPClient()), so that the API server's answer says whether a child was
// removed at once (no finalizer held it). Ordered deletion then moves on to the children it depended
// on in the same pass instead of waiting for the watch to show it gone. NewReconciler sets it. Without it,
// deletions go through the client and absence is confirmed by the cache or one read.
func WithConnection(cfg *rest.Config, httpClient *http.Client) Option {
	return func(c *config) {
		if cfg != nil && httpClient != nil {
			c.deleter = &directDeleter{cfg: cfg, http: httpClient}
		}
	}
}

// deletion is the API server's answer to the DELETE of one exact object.
type deletion int

const (
	// deletionAccepted: the object is being deleted (a finalizer or a grace period holds it), or,
	// when the answer cannot tell, it may be gone already.
	deletionAccepted deletion = iota
	// deletionRemoved: the API server removed the object at once (HTTP 200 to a DELETE that asked to
	// cascade; see directDeleter).
	deletionRemoved
	// deletionGone: the object no longer exists (404), or another object holds its name (the UID
	// precondition failed).
	deletionGone
	// deletionRefused: a conflict that says nothing about the object (a webhook, a proxy, an injected
	// fault): nothing happened; look again.
	deletionRefused
)

// deleteExactly deletes exactly the object observed, live (UID precondition), its dependents with
// propagation (background or foreground), and records the answer in what the controller knows of id,
// owner's child: gone (removed at once, 404, or another UID holds the name), or our DELETE accepted
// (seen: live came from the cache).
func (a *Applier) deleteExactly(ctx context.Context, id objectID, owner types.UID, proto, live client.Object, seen bool, propagation metav1.DeletionPropagation) (deletion, error) {
	answer, err := a.sendDelete(ctx, live, propagation)
	switch answer {
	case deletionGone, deletionRemoved:
		a.known.confirmGone(id, owner, live.GetUID())
	case deletionAccepted:
		a.known.sentDelete(id, owner, proto, live.GetUID(), seen)
	}
	return answer, err
}

// sendDelete sends the DELETE of exactly obj and classifies the answer. A foreground DELETE is always
// accepted, never removed at once: the API server adds the foregroundDeletion finalizer, which the
// garbage collector removes once the object's dependents are gone.
func (a *Applier) sendDelete(ctx context.Context, obj client.Object, propagation metav1.DeletionPropagation) (deletion, error) {
	if err := a.mayWrite(); err != nil {
		return deletionRefused, err
	}
	uid := obj.GetUID()
	var answer deletion
	var err error
	if a.cfg.deleter != nil && propagation != metav1.DeletePropagationForeground {
		answer, err = a.cfg.deleter.delete(ctx, a.client, a.scheme, obj)
	} else {
		answer, err = deletionAccepted, a.client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(propagation))
	}
	switch {
	case err == nil:
		return answer, nil
	case apierrors.IsNotFound(err):
		return deletionGone, nil
	case apierrors.IsConflict(err) && strings.Contains(err.Error(), "Precondition failed"):
		return deletionGone, nil
	case apierrors.IsConflict(err):
		return deletionRefused, nil
	}
	return deletionRefused, err
}

// directDeleter sends DELETE requests with a REST client per group version. It asks for cascading
// deletion the one way the API server answers 202 Accepted when the object still exists afterwards
// and 200 OK when it was removed at once: orphanDependents=false (the same background cascade as
// propagationPolicy=Background; the two cannot be combined).
type directDeleter struct {
	cfg     *rest.Config
	http    *http.Client
	clients sync.Map // schema.GroupVersion → rest.Interface
}

func (d *directDeleter) delete(ctx context.Context, c client.Client, scheme *runtime.Scheme, obj client.Object) (deletion, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return deletionRefused, err
	}
	mapping, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return deletionRefused, fmt.Errorf("map %s: %w", gvk, err)
	}
	rc, err := d.client(gvk)
	if err != nil {
		return deletionRefused, err
	}
	uid := obj.GetUID()
	body, err := json.Marshal(&metav1.DeleteOptions{
		TypeMeta:      metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"},
		Preconditions: &metav1.Preconditions{UID: &uid},
		//nolint:staticcheck // the one option whose answer tells removed (200) from held (202)
		OrphanDependents: ptr.To(false),
	})
	if err != nil {
		return deletionRefused, err
	}
	res := rc.Delete().
		NamespaceIfScoped(obj.GetNamespace(), mapping.Scope.Name() == meta.RESTScopeNameNamespace).
		Resource(mapping.Resource.Resource).
		Name(obj.GetName()).
		SetHeader("Content-Type", "application/json").
		Body(body).
		Do(ctx)
	if err := res.Error(); err != nil {
		return deletionRefused, err
	}
	var code int
	res.StatusCode(&code)
	if code == http.StatusOK {
		return deletionRemoved, nil
	}
	return deletionAccepted, nil
}

// client returns the REST client for gvk's group version.
func (d *directDeleter) client(gvk schema.GroupVersionKind) (rest.Interface, error) {
	gv := gvk.GroupVersion()
	if rc, ok := d.clients.Load(gv); ok {
		return rc.(rest.Interface), nil
	}
	rc, err := apiutil.RESTClientForGVK(gvk, true, true, d.cfg, serializer.CodecFactory{}, d.http)
	if err != nil {
		return nil, fmt.Errorf("rest client for %s: %w", gv, err)
	}
	actual, _ := d.clients.LoadOrStore(gv, rc)
	return actual.(rest.Interface), nil
}
