package sharding

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// resync looks at every object again, queues those this member must claim or hand over, and
// refreshes the owned and unassigned gauges.
func (s *Shard) resync() { s.scan(true) }

// scan classifies every object, refreshes the owned and unassigned gauges and, with queue, queues the
// objects this member must claim or hand over.
func (s *Shard) scan(queue bool) {
	s.mu.Lock()
	store := s.store
	s.mu.Unlock()
	if store == nil {
		return
	}
	owned, unassigned := 0, 0
	for _, o := range store.List() {
		m, ok := o.(metav1.Object)
		if !ok {
			continue
		}
		c := s.classify(m)
		switch c {
		case classOwned, classHandOver:
			owned++
		case classClaim, classUnassigned:
			unassigned++
		}
		if queue && (c == classClaim || c == classHandOver) { // the others need nothing from this member
			s.queue.Add(types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()})
		}
	}
	metricOwned.WithLabelValues(s.cfg.Ring, s.cfg.Member).Set(float64(owned))
	metricUnassigned.WithLabelValues(s.cfg.Ring, s.cfg.Member).Set(float64(unassigned))
}

// class is what an object is to this replica.
type class int

const (
	classOthers     class = iota // another member's (live, or expired and not fenced yet)
	classOwned                   // ours, and the ring agrees
	classHandOver                // ours, and the ring assigns it to another ready member
	classClaim                   // nobody's, and the ring assigns it to us
	classUnassigned              // nobody's, and the ring assigns it to another member
)

func (s *Shard) classify(m metav1.Object) class {
	s.mu.Lock()
	defer s.mu.Unlock()
	label := m.GetLabels()[s.key]
	owner := s.ring.Owner(m.GetUID())
	switch {
	case label == s.cfg.Member && (owner == s.cfg.Member || owner == ""):
		return classOwned
	case label == s.cfg.Member:
		return classHandOver
	case label != "" && (s.live[label] || s.expired[label]):
		return classOthers
	case s.claims.Owner(m.GetUID()) == s.cfg.Member && s.settled:
		return classClaim
	default:
		return classUnassigned
	}
}

// work claims the objects the queue names and tells the Reconciler about hand-overs.
func (s *Shard) work(ctx context.Context) {
	for {
		key, shutdown := s.queue.Get()
		if shutdown {
			return
		}
		err := s.handle(ctx, key)
		if err != nil && ctx.Err() == nil {
			s.log.Error(err, "cannot claim", "object", key)
			s.queue.AddRateLimited(key)
		} else {
			s.queue.Forget(key)
		}
		s.queue.Done(key)
	}
}

func (s *Shard) handle(ctx context.Context, key types.NamespacedName) error {
	s.mu.Lock()
	store := s.store
	s.mu.Unlock()
	item, exists, err := store.GetByKey(storeKey(key))
	if err != nil || !exists {
		return err
	}
	m, ok := item.(*metav1.PartialObjectMetadata)
	if !ok {
		return nil
	}
	switch s.classify(m) {
	case classClaim:
		return s.claim(ctx, m)
	case classHandOver:
		obj := m.DeepCopy()
		obj.SetGroupVersionKind(s.gvk)
		select {
		case s.events <- event.GenericEvent{Object: obj}:
		case <-ctx.Done():
		}
	}
	return nil
}

func storeKey(k types.NamespacedName) string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// claim labels an object nobody owns with this member, under its resourceVersion; an object that
// belonged to a member that is gone is also marked MovedFromAnnotation, so that the Reconciler
// relabels its children.
func (s *Shard) claim(ctx context.Context, m *metav1.PartialObjectMetadata) error {
	from := m.GetLabels()[s.key]
	reason := ReasonNew
	if from != "" {
		reason = ReasonTakeOver
	}
	if err := s.relabel(ctx, m, s.cfg.Member, from); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// Changed or deleted meanwhile: the informer brings the new version, which is
			// classified again. Harmless, so below the error level.
			s.log.V(1).Info("claim conflicted; tried again at the object's next version", "object", client.ObjectKeyFromObject(m), "error", err)
			return nil
		}
		return err
	}
	metricMoves.WithLabelValues(s.cfg.Ring, s.cfg.Member, reason).Inc()
	s.log.V(1).Info("claimed", "object", client.ObjectKeyFromObject(m), "from", from, "reason", reason)
	return nil
}

// relabel sets the shard label of m to member, and MovedFromAnnotation to from (removed when from is
// empty), in one patch under m's resourceVersion.
func (s *Shard) relabel(ctx context.Context, m client.Object, member, from string) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(s.gvk)
	obj.SetNamespace(m.GetNamespace())
	obj.SetName(m.GetName())
	patch, err := labelPatch(s.key, member, from, m.GetResourceVersion())
	if err != nil {
		return err
	}
	return s.writer.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}
