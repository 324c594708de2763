package sharding

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// gatherWait bounds how long a round of take-overs waits for the take-over claims this member
	// sent to reach its view of the objects (milliseconds, normally), so that one round takes them all.
	gatherWait = 2 * time.Second
	// gatherPoll is how often it looks.
	gatherPoll = 10 * time.Millisecond
	// takenWait bounds how long a round waits for the manager's cache to show the children it
	// relabelled (milliseconds, normally), and takenPoll is how often it looks.
	takenWait = 5 * time.Second
	takenPoll = 5 * time.Millisecond
	// ownersPerList is how many owners' UIDs one LIST of children names (about 40 bytes of query
	// each).
	ownersPerList = 100
	// listPage is the page size of those LISTs.
	listPage = 500
)

// takeRound is one batch of objects that moved here, whose children are listed, relabelled and
// awaited in the cache together.
type takeRound struct {
	done chan struct{}
	// jobs grows, under the shard's lock, until the round stops gathering.
	jobs map[types.UID]*takeJob
}

// takeJob is one object of a round: what the round relabelled of its children, or why it could not.
// Read only once the round is done.
type takeJob struct {
	round *takeRound
	taken []client.Object
	err   error
}

// pending reports whether j's round is under way or took the children: false for no job, or one
// whose round failed (a new round takes the object). The caller holds the shard's lock.
func (j *takeJob) pending() bool {
	return j != nil && (!j.round.over() || j.err == nil)
}

func (r *takeRound) over() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// add makes owner part of the round; the caller holds the shard's lock.
func (s *Shard) addToRound(r *takeRound, uid types.UID) *takeJob {
	j := &takeJob{round: r}
	r.jobs[uid] = j
	s.takes[uid] = j
	return j
}

// takeRound returns owner's job once its round is over: the job of a round already under way or
// done (unless it failed), else a place in the round that still gathers, else a new round, which
// this call runs.
func (s *Shard) takeRound(ctx context.Context, owner client.Object, ownerLabel string, kinds []schema.GroupVersionKind) (*takeJob, error) {
	uid := owner.GetUID()
	s.mu.Lock()
	j := s.takes[uid]
	var run *takeRound
	if !j.pending() { // none, or failed: take it in a round
		if s.gathering == nil {
			s.gathering = &takeRound{done: make(chan struct{}), jobs: map[types.UID]*takeJob{}}
			run = s.gathering
		}
		j = s.addToRound(s.gathering, uid)
	}
	s.mu.Unlock()
	if run != nil {
		s.runRound(ctx, run, ownerLabel, kinds)
	}
	select {
	case <-j.round.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return j, j.err
}

// runRound waits (at most gatherWait) until the take-over claims this member sent reached its view,
// adds to r every object of that view that moved here and is not taken yet, lists their children
// by owner, relabels those that do not carry this member's label, and waits once for the manager's
// cache to show them. It sets each job's outcome, then ends r.
func (s *Shard) runRound(ctx context.Context, r *takeRound, ownerLabel string, kinds []schema.GroupVersionKind) {
	defer close(r.done)
	s.awaitClaims(ctx)
	s.mu.Lock()
	s.gathering = nil
	if s.store != nil {
		for _, o := range s.store.List() {
			m, ok := o.(metav1.Object)
			if !ok || m.GetLabels()[s.key] != s.cfg.Member || m.GetAnnotations()[MovedFromAnnotation] == "" {
				continue
			}
			uid := m.GetUID()
			if rv, ok := s.moved[uid]; s.takes[uid].pending() || s.cleared[uid] || s.handing[uid] || (ok && rv == m.GetResourceVersion()) {
				continue // being taken or taken, cleared (the view lags), being handed over, or a version handed over already
			}
			s.addToRound(r, uid)
		}
	}
	jobs := maps.Clone(r.jobs)
	s.mu.Unlock()

	children, err := s.listChildren(ctx, slices.Sorted(maps.Keys(jobs)), ownerLabel, kinds)
	if err != nil {
		for _, j := range jobs {
			j.err = err
		}
		return
	}
	patch, err := labelPatch(s.key, s.cfg.Member, "", "")
	if err != nil {
		for _, j := range jobs {
			j.err = err
		}
		return
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	limit := make(chan struct{}, claimWorkers)
	for uid, kids := range children {
		j := jobs[uid]
		if j == nil {
			continue // a child naming no owner of the round: not selected, in fact
		}
		for _, child := range kids {
			wg.Add(1)
			limit <- struct{}{}
			go func() {
				defer func() { <-limit; wg.Done() }()
				gvk := child.GroupVersionKind()
				err := s.writer.Patch(ctx, child, client.RawPatch(types.MergePatchType, patch))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case apierrors.IsNotFound(err):
				case err != nil:
					j.err = fmt.Errorf("relabel %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(child), err)
				default:
					child.SetGroupVersionKind(gvk) // the answer's kind is the list item's
					j.taken = append(j.taken, child)
				}
			}()
		}
	}
	wg.Wait()
	var taken []client.Object
	for _, j := range jobs {
		taken = append(taken, j.taken...)
	}
	s.awaitCache(ctx, taken)
	s.log.V(1).Info("took children over", "objects", len(jobs), "children", len(taken))
}

// listChildren returns the children of owners (objects of kinds carrying ownerLabel=an owner's UID)
// that do not carry this member's label, by owner: one LIST (metadata, paged) per kind for every
// ownersPerList owners.
func (s *Shard) listChildren(ctx context.Context, owners []types.UID, ownerLabel string, kinds []schema.GroupVersionKind) (map[types.UID][]*metav1.PartialObjectMetadata, error) {
	out := map[types.UID][]*metav1.PartialObjectMetadata{}
	for _, gvk := range kinds {
		mapping, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("list %s children: %w", gvk.Kind, err)
		}
		for chunk := range slices.Chunk(owners, ownersPerList) {
			uids := make([]string, len(chunk))
			for i, u := range chunk {
				uids[i] = string(u)
			}
			req, err := labels.NewRequirement(ownerLabel, selection.In, uids)
			if err != nil {
				return nil, fmt.Errorf("list %s children: %w", gvk.Kind, err)
			}
			opts := metav1.ListOptions{LabelSelector: labels.NewSelector().Add(*req).String(), Limit: listPage}
			for {
				list, err := s.meta.Resource(mapping.Resource).List(ctx, opts)
				if err != nil {
					return nil, fmt.Errorf("list the %s children of %d objects: %w", gvk.Kind, len(chunk), err)
				}
				for i := range list.Items {
					child := &list.Items[i]
					if child.Labels[s.key] == s.cfg.Member {
						continue
					}
					child.SetGroupVersionKind(gvk)
					owner := types.UID(child.Labels[ownerLabel])
					out[owner] = append(out[owner], child)
				}
				if list.Continue == "" {
					break
				}
				opts.Continue = list.Continue
			}
		}
	}
	return out, nil
}

// awaitClaims waits, at most gatherWait, until no object of this member's view is one it claims
// from a member that is gone: the take-over claims it sent have come back through its watch.
func (s *Shard) awaitClaims(ctx context.Context) {
	s.mu.Lock()
	store := s.store
	s.mu.Unlock()
	if store == nil {
		return
	}
	deadline := time.Now().Add(gatherWait)
	for {
		pending := slices.ContainsFunc(store.List(), func(o any) bool {
			m, ok := o.(metav1.Object)
			return ok && m.GetLabels()[s.key] != "" && s.classify(m) == classClaim
		})
		if !pending || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(gatherPoll):
		}
	}
}

// awaitCache waits, at most takenWait, until the manager's cache shows each of the children with
// this member's label. Until their watch events arrive, a cache scoped with ScopeCache does not
// show children that moved here: a reconcile would take them for missing and send creates that
// fail. Kinds the cache does not hold typed are not waited for; past the bound the Reconciler's
// own reads keep the reconcile right.
func (s *Shard) awaitCache(ctx context.Context, children []client.Object) {
	if s.cache == nil || s.scheme == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, takenWait)
	defer cancel()
	pending := slices.Clone(children)
	for {
		pending = slices.DeleteFunc(pending, func(child client.Object) bool {
			proto, err := s.scheme.New(child.GetObjectKind().GroupVersionKind())
			cached, ok := proto.(client.Object)
			if err != nil || !ok {
				return true
			}
			err = s.cache.Get(ctx, client.ObjectKeyFromObject(child), cached)
			return err == nil && cached.GetLabels()[s.key] == s.cfg.Member
		})
		if len(pending) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			s.log.V(1).Info("cache does not show every child taken over yet; going on", "missing", len(pending), "error", ctx.Err().Error())
			return
		case <-time.After(takenPoll):
		}
	}
}

// beginHandOver keeps rounds of take-overs away from the object with uid while HandOver moves it,
// after waiting for the round that may be relabelling its children.
func (s *Shard) beginHandOver(ctx context.Context, uid types.UID) error {
	s.mu.Lock()
	s.handing[uid] = true
	j := s.takes[uid]
	s.mu.Unlock()
	if j == nil {
		return nil
	}
	select {
	case <-j.round.done:
		return nil
	case <-ctx.Done():
		s.endHandOver(uid)
		return ctx.Err()
	}
}

// endHandOver ends beginHandOver; the object's children are no longer this member's to take.
func (s *Shard) endHandOver(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.handing, uid)
	delete(s.takes, uid)
}

// forgetTake drops the job of a round that is over, and the record of a cleared mark, for an object
// that was deleted, moved away or lost its mark, as the view o shows it: the move it was about is
// over.
func (s *Shard) forgetTake(o any, deleted bool) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o, deleted = d.Obj, true
	}
	m, ok := o.(metav1.Object)
	if !ok {
		return
	}
	if !deleted && m.GetLabels()[s.key] == s.cfg.Member && m.GetAnnotations()[MovedFromAnnotation] != "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.cleared, m.GetUID())
	if j := s.takes[m.GetUID()]; j != nil && j.round.over() {
		delete(s.takes, m.GetUID())
	}
}

// clearedMark records that TakeChildren took owner's children and removed its mark: until this
// member's view of the objects shows that, no round takes owner again.
func (s *Shard) clearedMark(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.takes, uid)
	if len(s.cleared) > 10000 {
		clear(s.cleared)
	}
	s.cleared[uid] = true
}
