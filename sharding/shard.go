package sharding

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// ShardLabelPrefix starts the label that assigns an object to a member of a ring: ShardLabelPrefix+ring, whose
// value is the member's name. The sharded object carries it, and so does every child, so that each
// replica's cache selects exactly its share.
const ShardLabelPrefix = "shard.convergo.dev/"

// MovedFromAnnotation marks an object that changed member (handed over, or taken over from a member
// that is gone); its value is the member it came from. The new member relabels the object's children,
// read from the API server, then removes the annotation.
const MovedFromAnnotation = "sharding.convergo.dev/moved-from"

// Label returns the label key that assigns objects to members of ring.
func Label(ring string) string { return ShardLabelPrefix + ring }

// Config names one replica's place in a ring.
type Config struct {
	// Ring names the ring: one per sharded controller.
	Ring string
	// Member is the replica's name in the ring: stable across restarts, such as a StatefulSet pod's.
	Member string
	// Namespace holds the ring's Leases.
	Namespace string
	// ObjectNamespace, when set, limits the sharded objects to one namespace (the manager's cache
	// must watch it); empty: all namespaces.
	ObjectNamespace string
}

// Validate reports a Config that cannot work, saying what to change.
func (c Config) Validate() error {
	var errs []error
	if c.Ring == "" || c.Member == "" || c.Namespace == "" {
		errs = append(errs, fmt.Errorf("sharding config %+v: ring, member and namespace are all required", c))
	}
	for _, msg := range validation.IsQualifiedName(Label(c.Ring)) {
		errs = append(errs, fmt.Errorf("ring %q makes the label key %q invalid: %s", c.Ring, Label(c.Ring), msg))
	}
	for _, msg := range validation.IsValidLabelValue(c.Member) {
		errs = append(errs, fmt.Errorf("member %q is not a valid label value: %s", c.Member, msg))
	}
	for _, msg := range validation.IsDNS1123Subdomain(c.Ring + "-" + c.Member) {
		errs = append(errs, fmt.Errorf("lease name %q is invalid: %s; choose a shorter lower-case ring or member", c.Ring+"-"+c.Member, msg))
	}
	return errors.Join(errs...)
}

// Shard is one replica's share of a sharded controller. Added to the manager (mgr.Add) and given to
// the Reconciler (reconcile.WithSharding), it
//
//   - holds the replica's Lease (a Member) and fences members whose Lease expired;
//   - keeps a metadata-only view of every object of the sharded kind, to find objects nobody owns: new
//     ones (no label), ones whose member is gone (released or fenced) and ones with a label naming no
//     member; it claims those the ring assigns to it, with one resourceVersion-guarded patch each;
//   - tells the Reconciler which of its objects now hash to another member, so that the Reconciler
//     hands each over between two of its reconciles (HandOver), never during one;
//   - guards every write: Begin refuses once the Lease was not renewed within the renew deadline, and
//     a graceful stop waits for the reconciles in flight before it releases the Lease.
//
// The caches of the manager must hold only the replica's share (Config.ScopeCache).
type Shard struct {
	cfg    Config
	key    string
	member *Member
	mcfg   memberConfig
	gvk    schema.GroupVersionKind
	gvr    schema.GroupVersionResource
	meta   metadata.Interface
	writer client.Client
	mapper meta.RESTMapper
	log    logr.Logger

	mu sync.Mutex
	// ring holds the ready members: an object moves from a member to another only when both are ready.
	ring *Ring
	// claims holds every live member, ready or not: it decides who claims an object nobody owns.
	claims *Ring
	// settledAt is when this member had held its Lease for the join delay: it claims nothing before,
	// so that replicas starting together see each other before they claim.
	settledAt time.Time
	settled   bool            // settledAt has passed, as of the last observe
	live      map[string]bool // live members (ready or not)
	expired   map[string]bool // expired members nobody fenced yet
	moved     map[types.UID]string
	store     toolscache.Store
	events    chan event.GenericEvent
	inflight  int
	stopping  bool // Begin admits no new reconcile
	released  bool // the drain ended: every write is refused
	idle      *sync.Cond
	queue     workqueue.TypedRateLimitingInterface[types.NamespacedName]
	// retries spaces the hand-overs tried again after a conflict, per object.
	retries workqueue.TypedRateLimiter[types.NamespacedName]
	// recount: an object was added, changed or deleted since the gauges were last counted.
	recount atomic.Bool

	// cache reads the manager's (scoped) cache, scheme makes its typed objects: a round of
	// take-overs waits until the cache shows the children it relabelled. Nil without a manager.
	cache  client.Reader
	scheme *runtime.Scheme
	// takes holds the objects that moved here whose children a round of take-overs relabels or
	// relabelled (see TakeChildren); gathering is the round that still admits objects.
	takes     map[types.UID]*takeJob
	gathering *takeRound
	// cleared holds the objects whose mark TakeChildren removed, until this member's view shows it.
	cleared map[types.UID]bool
	// handing holds the objects HandOver is moving away: no round takes their children.
	handing map[types.UID]bool
}

// claimWorkers is how many claims, hand-overs and take-overs a member sends at once: a take-over of a
// dead member's objects is one patch each, and one at a time made it grow with the objects held.
const claimWorkers = 8

// handOverRetryBase and handOverRetryMax space the tries of a hand-over that conflicted (the object
// changed since the version the Reconciler held): 5 ms, doubling, at most 5 s apart.
const (
	handOverRetryBase = 5 * time.Millisecond
	handOverRetryMax  = 5 * time.Second
)

// gaugeInterval is how often the owned and unassigned gauges are counted again while objects change:
// they are current within that of a claim, a move or a take-over.
const gaugeInterval = 250 * time.Millisecond

// NewShard returns the shard of mgr's replica for objects of obj's kind (the sharded controller's
// type), configured by cfg. opts set the Lease's timings and the join delay.
func NewShard(mgr manager.Manager, cfg Config, obj client.Object, opts ...MemberOption) (*Shard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
	if err != nil {
		return nil, fmt.Errorf("new shard %s/%s: %w", cfg.Ring, cfg.Member, err)
	}
	mapping, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("new shard %s/%s: map %s: %w", cfg.Ring, cfg.Member, gvk, err)
	}
	mc, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("new shard %s/%s: metadata client: %w", cfg.Ring, cfg.Member, err)
	}
	s := newShard(cfg, NewMember(mgr.GetClient(), cfg.Ring, cfg.Member, cfg.Namespace, opts...), mgr.GetClient())
	s.gvk, s.gvr, s.meta, s.mapper = gvk, mapping.Resource, mc, mgr.GetRESTMapper()
	s.cache, s.scheme = mgr.GetCache(), mgr.GetScheme()
	s.log = mgr.GetLogger().WithName("shard").WithValues("ring", cfg.Ring, "member", cfg.Member)
	return s, nil
}

// Join returns the shard of mgr's replica for objects of obj's kind (NewShard) and adds it to mgr, so
// that it runs, and releases its Lease, with the manager.
func Join(mgr manager.Manager, cfg Config, obj client.Object, opts ...MemberOption) (*Shard, error) {
	s, err := NewShard(mgr, cfg, obj, opts...)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(s); err != nil {
		return nil, fmt.Errorf("join ring %s as %s: %w", cfg.Ring, cfg.Member, err)
	}
	return s, nil
}

// newShard returns the state of a shard before it starts; c writes (guarded by the shard).
func newShard(cfg Config, member *Member, c client.Client) *Shard {
	s := &Shard{
		cfg: cfg, key: Label(cfg.Ring), member: member, mcfg: member.cfg, log: logr.Discard(),
		ring: NewRing(nil), claims: NewRing(nil),
		live: map[string]bool{}, expired: map[string]bool{}, moved: map[types.UID]string{},
		takes: map[types.UID]*takeJob{}, cleared: map[types.UID]bool{}, handing: map[types.UID]bool{},
		events: make(chan event.GenericEvent, 1024),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "shard-" + cfg.Ring + "-" + cfg.Member}),
		retries: workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](handOverRetryBase, handOverRetryMax),
	}
	s.idle = sync.NewCond(&s.mu)
	s.writer = s.Client(c)
	return s
}

// Config returns the shard's configuration.
func (s *Shard) Config() Config { return s.cfg }

// Label returns the label key and value of the objects this shard owns.
func (s *Shard) Label() (key, value string) { return s.key, s.cfg.Member }

// Member returns the shard's membership (its Lease).
func (s *Shard) Member() *Member { return s.member }

// Events is the source of the hand-overs: the Reconciler watches it (source.Channel) and reconciles
// each object it names, which hands the object over. Only the Reconciler given the shard reads it.
func (s *Shard) Events() <-chan event.GenericEvent { return s.events }

// NeedLeaderElection is false: every replica of a sharded controller is active.
func (s *Shard) NeedLeaderElection() bool { return false }

// Start runs the shard until ctx ends: the Lease, the view of the sharded objects, claims and fences.
// On ctx's end it refuses new writes, waits for the reconciles in flight (at most the renew deadline),
// then releases the Lease so that the others take the objects over at once.
func (s *Shard) Start(ctx context.Context) error {
	memberCtx, stopMember := context.WithCancel(context.WithoutCancel(ctx))
	memberDone := make(chan error, 1)
	go func() { memberDone <- s.member.Start(memberCtx) }()

	informer := metadatainformer.NewFilteredMetadataInformer(s.meta, s.gvr, s.cfg.ObjectNamespace, 0, toolscache.Indexers{}, nil).Informer()
	_ = informer.SetTransform(func(in any) (any, error) {
		if o, ok := in.(metav1.Object); ok {
			o.SetManagedFields(nil)
		}
		return in, nil
	})
	enqueue := func(o any) {
		if m, ok := o.(metav1.Object); ok {
			s.queue.Add(types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()})
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { enqueue(o); s.recount.Store(true) },
		UpdateFunc: func(_, o any) { enqueue(o); s.forgetTake(o, false); s.recount.Store(true) },
		DeleteFunc: func(o any) { s.forgetTake(o, true); s.recount.Store(true) },
	}); err != nil {
		stopMember()
		return fmt.Errorf("shard %s/%s: watch %s: %w", s.cfg.Ring, s.cfg.Member, s.gvk.Kind, err)
	}
	s.mu.Lock()
	s.store = informer.GetStore()
	s.mu.Unlock()
	go informer.RunWithContext(ctx)
	for range claimWorkers {
		go s.work(ctx)
	}
	go s.countGauges(ctx)

	tick := s.mcfg.clock.NewTicker(s.mcfg.retryPeriod)
	defer tick.Stop()
	lastResync := s.mcfg.clock.Now()
	for {
		s.observe(ctx)
		if s.mcfg.clock.Since(lastResync) >= s.mcfg.resync {
			s.resync()
			lastResync = s.mcfg.clock.Now()
		}
		select {
		case <-ctx.Done():
			s.queue.ShutDown()
			s.drain()
			stopMember()
			return <-memberDone
		case <-tick.C():
		}
	}
}

// observe reads the ring's Leases, fences the expired members and, when the ready members changed,
// looks at every object again.
func (s *Shard) observe(ctx context.Context) {
	v, err := s.member.view(ctx)
	if err != nil {
		s.log.Error(err, "cannot observe the ring")
		return
	}
	writable := s.member.CanWrite()
	if writable {
		for _, name := range slices.Clone(v.expired) {
			if name == s.cfg.Member {
				continue
			}
			if won, err := s.member.Fence(ctx, name); err != nil {
				s.log.Error(err, "cannot fence an expired member", "expired", name)
			} else if won {
				// Gone now: its objects are claimed at this look, not the next one.
				s.log.Info("fenced an expired member", "expired", name)
				v.expired = slices.DeleteFunc(v.expired, func(n string) bool { return n == name })
			}
		}
	}
	var ready []string
	for name, held := range v.live {
		if held >= s.mcfg.joinDelay {
			ready = append(ready, name)
		}
	}
	ready = s.withSelf(ready, writable)
	live := s.withSelf(slices.Collect(maps.Keys(v.live)), writable)
	ring, claims := NewRing(ready), NewRing(live)
	now := s.mcfg.clock.Now()
	s.mu.Lock()
	switch {
	case !writable:
		s.settledAt = time.Time{}
		// Others may take this member's objects over: what rounds took for it is no longer its.
		maps.DeleteFunc(s.takes, func(_ types.UID, j *takeJob) bool { return j.round.over() })
		clear(s.cleared)
	case s.settledAt.IsZero():
		s.settledAt = now.Add(s.mcfg.joinDelay)
	}
	settled := !s.settledAt.IsZero() && !now.Before(s.settledAt)
	changed := !slices.Equal(ring.Members(), s.ring.Members()) || !slices.Equal(claims.Members(), s.claims.Members()) ||
		settled != s.settled || !maps.Equal(s.expired, setOf(v.expired))
	s.settled = settled
	s.ring, s.claims = ring, claims
	s.live = setOf(live)
	s.expired = setOf(v.expired)
	s.mu.Unlock()
	metricMembers.WithLabelValues(s.cfg.Ring, s.cfg.Member).Set(float64(len(ring.Members())))
	if changed {
		s.log.V(1).Info("ring changed", "members", ring.Members())
		s.resync()
	}
}

// withSelf returns names with this member in it while it may write (its own renewal may not be in
// the cache yet), and without it otherwise.
func (s *Shard) withSelf(names []string, writable bool) []string {
	names = slices.DeleteFunc(names, func(n string) bool { return n == s.cfg.Member })
	if writable {
		names = append(names, s.cfg.Member)
	}
	return names
}

// countGauges counts the owned and unassigned gauges again every gaugeInterval while objects change,
// until ctx ends.
func (s *Shard) countGauges(ctx context.Context) {
	tick := time.NewTicker(gaugeInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if s.recount.Swap(false) {
				s.scan(false)
			}
		}
	}
}

// Target returns the member the ring assigns the object with uid to (this member when the ring is
// empty).
func (s *Shard) Target(uid types.UID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.ring.Owner(uid); o != "" {
		return o
	}
	return s.cfg.Member
}

// HandOver moves obj to the member the ring assigns it to, when that is another ready member: one
// patch of its label under its resourceVersion, with MovedFromAnnotation naming this member. It
// reports whether the caller (the Reconciler, between two reconciles of obj) must stop there: obj
// moved, and until its cache shows the move Stale tells it to leave obj alone; or obj changed since
// the version the caller holds (a conflict), and the shard tries the hand-over again at obj's next
// version (the Reconciler is told through Events, at most handOverRetryMax later). A conflict is
// harmless and retried, so it is logged at V(1) and returned as no error; so is an object deleted
// meanwhile. A round of take-overs that is relabelling obj's children finishes first.
func (s *Shard) HandOver(ctx context.Context, obj client.Object) (bool, error) {
	target := s.Target(obj.GetUID())
	if target == s.cfg.Member || obj.GetLabels()[s.key] != s.cfg.Member {
		return false, nil
	}
	if err := s.beginHandOver(ctx, obj.GetUID()); err != nil {
		return false, err
	}
	defer s.endHandOver(obj.GetUID())
	key := client.ObjectKeyFromObject(obj)
	rv := obj.GetResourceVersion()
	if err := s.relabel(ctx, obj, target, s.cfg.Member); err != nil {
		switch {
		case apierrors.IsConflict(err):
			s.log.V(1).Info("hand-over conflicted; tried again at the object's next version", "object", key, "to", target, "error", err)
			s.queue.AddAfter(key, s.retries.When(key))
			return true, nil
		case apierrors.IsNotFound(err):
			s.log.V(1).Info("hand-over found the object deleted", "object", key)
			return true, nil
		}
		return false, fmt.Errorf("hand %s over to %s: %w", key, target, err)
	}
	s.retries.Forget(key)
	s.mu.Lock()
	if len(s.moved) > 10000 {
		clear(s.moved)
	}
	s.moved[obj.GetUID()] = rv
	s.mu.Unlock()
	metricMoves.WithLabelValues(s.cfg.Ring, s.cfg.Member, ReasonRebalance).Inc()
	s.log.V(1).Info("handed over", "object", key, "to", target)
	return true, nil
}

// Stale reports whether obj is a version this replica already handed over: its cache has not caught
// up with the move yet.
func (s *Shard) Stale(obj client.Object) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rv, ok := s.moved[obj.GetUID()]
	return ok && rv == obj.GetResourceVersion()
}

// Begin admits one reconcile that may write: it returns false once the Lease was not renewed within
// the renew deadline, or while the shard stops. Call end when the reconcile is over.
func (s *Shard) Begin() (end func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping || !s.member.CanWrite() {
		return func() {}, false
	}
	s.inflight++
	return func() {
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
		s.idle.Broadcast()
	}, true
}

// drain refuses new reconciles and waits until those in flight ended, at most the renew deadline.
func (s *Shard) drain() {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	deadline := time.AfterFunc(s.mcfg.renewDeadline, s.idle.Broadcast)
	defer deadline.Stop()
	start := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.inflight > 0 && time.Since(start) < s.mcfg.renewDeadline {
		s.idle.Wait()
	}
	s.released = true
}

// TakeChildren relabels the children of owner (objects of kinds carrying the tracking label
// ownerLabel=owner's UID), read from the API server, that do not carry this member's label yet, then
// removes MovedFromAnnotation from owner. The Reconciler calls it on the first reconcile of an object
// that moved here, before anything reads its children from the cache. It returns the children it
// relabelled (metadata with their kind, as the relabel left them), which a cache scoped with
// ScopeCache shows once their watch events arrive.
//
// The objects that moved here are taken in rounds, not one by one: the first call waits until the
// claims of a take-over this member sent have reached its view of the objects (at most gatherWait),
// then lists the children of every object that moved here and was not taken yet (one LIST per kind
// for up to 100 owners, by their UIDs), relabels them, and waits once until the manager's cache shows
// them (at most takenWait); the calls for the other objects of the round wait for it and then only
// clear their mark. A call whose round failed starts a new one.
func (s *Shard) TakeChildren(ctx context.Context, owner client.Object, ownerLabel string, kinds []schema.GroupVersionKind) ([]client.Object, error) {
	job, err := s.takeRound(ctx, owner, ownerLabel, kinds)
	if err != nil {
		return nil, fmt.Errorf("take the children of %s: %w", client.ObjectKeyFromObject(owner), err)
	}
	patch, err := labelPatch(s.key, s.cfg.Member, "", "")
	if err != nil {
		return nil, err
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(s.gvk)
	obj.SetNamespace(owner.GetNamespace())
	obj.SetName(owner.GetName())
	// The same patch as the children's: the owner already carries this member's label, and loses the mark.
	if err := s.writer.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return job.taken, fmt.Errorf("mark %s as taken: %w", client.ObjectKeyFromObject(owner), err)
	}
	owner.SetResourceVersion(obj.GetResourceVersion())
	s.clearedMark(owner.GetUID())
	return job.taken, nil
}

func setOf(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
