package member

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// SecretLabel marks a Secret of the hub that holds a member cluster's kubeconfig; its value is the
// member's name (the name Node.InCluster uses).
const SecretLabel = "convergo.dev/member-cluster"

// SecretKey is the key of the kubeconfig in such a Secret's data.
const SecretKey = "kubeconfig"

// FromSecrets keeps the set in step with the Secrets in namespace labelled SecretLabel: a Secret's
// kubeconfig (its data under SecretKey) becomes the member cluster its label names, made by
// newCluster; a changed kubeconfig replaces it; a deleted Secret removes it. newCluster shapes the
// member's cluster (its scheme, a cache holding only the operator's children, a request timeout).
// It adds a small controller to the manager, named "member-clusters", which reads such Secrets from
// the manager's cache: call CacheOptions on the manager's cache options so that the cache holds only
// them.
//
//	members := member.NewSet(mgr)
//	err := members.FromSecrets("convergo-system", func(name string, cfg *rest.Config) (cluster.Cluster, error) {
//		return cluster.New(cfg, func(o *cluster.Options) { o.Scheme = mgr.GetScheme() })
//	})
func (s *Set) FromSecrets(namespace string, newCluster func(name string, cfg *rest.Config) (cluster.Cluster, error)) error {
	r := &secretReconciler{set: s, namespace: namespace, newCluster: newCluster, reader: s.mgr.GetClient(), loaded: map[string]loaded{}}
	hasLabel := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[SecretLabel]
		return ok && o.GetNamespace() == namespace
	})
	err := builder.ControllerManagedBy(s.mgr).
		Named("member-clusters").
		For(&corev1.Secret{}, builder.WithPredicates(hasLabel)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("watch member cluster Secrets in %s: %w", namespace, err)
	}
	return nil
}

// CacheOptions makes the manager's cache hold, of Secrets, only those labelled SecretLabel: call it
// on the options of a manager whose set FromSecrets fills (and which reads no other Secret).
func CacheOptions(opts *cache.Options) {
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	sel, _ := labels.Parse(SecretLabel)
	opts.ByObject[&corev1.Secret{}] = cache.ByObject{Label: sel}
}

// loaded is the member a Secret made, and the digest of the kubeconfig it was made from.
type loaded struct {
	member string
	digest [sha256.Size]byte
}

// secretReconciler turns member cluster Secrets into members of a Set.
type secretReconciler struct {
	set        *Set
	namespace  string
	newCluster func(name string, cfg *rest.Config) (cluster.Cluster, error)
	reader     client.Reader

	mu sync.Mutex
	// loaded is by Secret name.
	loaded map[string]loaded
}

func (r *secretReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var sec corev1.Secret
	err := r.reader.Get(ctx, req.NamespacedName, &sec)
	name := sec.Labels[SecretLabel]
	r.mu.Lock()
	defer r.mu.Unlock()
	prev, had := r.loaded[req.Name]
	switch {
	case apierrors.IsNotFound(err) || err == nil && (name == "" || sec.DeletionTimestamp != nil):
		if had {
			r.set.Remove(prev.member)
			delete(r.loaded, req.Name)
			ctrl.LoggerFrom(ctx).Info("member cluster removed", "member", prev.member)
		}
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("read member cluster Secret %s: %w", req.NamespacedName, err)
	}
	raw := sec.Data[SecretKey]
	digest := sha256.Sum256(append([]byte(name+"\x00"), raw...))
	if had && prev.digest == digest {
		return ctrl.Result{}, nil
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("member cluster Secret %s: the kubeconfig under %q: %w", req.NamespacedName, SecretKey, err)
	}
	c, err := r.newCluster(name, cfg)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("member cluster %q (Secret %s): %w", name, req.NamespacedName, err)
	}
	if had && prev.member != name {
		r.set.Remove(prev.member)
	}
	if err := r.set.Add(name, c); err != nil {
		return ctrl.Result{}, err
	}
	r.loaded[req.Name] = loaded{member: name, digest: digest}
	ctrl.LoggerFrom(ctx).Info("member cluster added", "member", name, "host", cfg.Host)
	return ctrl.Result{}, nil
}
