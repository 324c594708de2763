package sharding

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels of a ring's Leases.
const (
	// RingLabel names the ring a Lease belongs to; a Member lists its ring's Leases by it.
	RingLabel = "sharding.convergo.dev/ring"
	// MemberLabel names the member a Lease belongs to.
	MemberLabel = "sharding.convergo.dev/member"
)

// fencedPrefix starts the holderIdentity a survivor writes into the Lease of a member it declared
// dead: "fenced-by-<survivor>".
const fencedPrefix = "fenced-by-"

// Defaults of a Member's timing: client-go's leader election values.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// MemberOption configures NewMember.
type MemberOption func(*memberConfig)

type memberConfig struct {
	leaseDuration, renewDeadline, retryPeriod time.Duration
	clock                                     clock.WithTicker
	// joinDelay and resync are used by a Shard only.
	joinDelay, resync time.Duration
}

// WithLeaseTimings sets how long a Lease holds without renewal (leaseDuration), how long the member
// keeps writing after its last successful renewal (renewDeadline, shorter than leaseDuration so that
// it stops before anyone may take over) and how often it renews (retryPeriod). Defaults: 15 s, 10 s
// and 2 s, as client-go's leader election; a duration that is not positive keeps its default.
func WithLeaseTimings(leaseDuration, renewDeadline, retryPeriod time.Duration) MemberOption {
	return func(c *memberConfig) {
		for _, t := range []struct {
			to   *time.Duration
			from time.Duration
		}{{&c.leaseDuration, leaseDuration}, {&c.renewDeadline, renewDeadline}, {&c.retryPeriod, retryPeriod}} {
			if t.from > 0 {
				*t.to = t.from
			}
		}
	}
}

// WithJoinDelay sets how long a member must hold its Lease before the others hand objects over to it
// (default 2 retry periods): a replica that restarts in a loop does not pull objects back and forth.
// Used by a Shard.
func WithJoinDelay(d time.Duration) MemberOption { return func(c *memberConfig) { c.joinDelay = d } }

// WithResync sets how often a Shard looks at every object again, to claim any that nobody owns
// (default 1 minute; membership changes and each object's own changes trigger a look at once).
func WithResync(d time.Duration) MemberOption { return func(c *memberConfig) { c.resync = d } }

// WithClock replaces the real clock (for tests of the timing rules).
func WithClock(clk clock.WithTicker) MemberOption { return func(c *memberConfig) { c.clock = clk } }

// Member is one replica's membership of a ring. It holds the Lease "<ring>-<name>" in its namespace,
// labelled with the ring and the member, renews it every retry period, and reads the ring's other
// Leases to know who is live:
//
//   - a member is live while this replica has seen its Lease renewed within the lease duration, as
//     measured by this replica's own clock (client-go's rule, which tolerates clock skew);
//   - a member is gone once it released its Lease (graceful stop) or a survivor fenced it: Fence
//     writes "fenced-by-<survivor>" under a resourceVersion precondition, so exactly one survivor wins;
//   - CanWrite turns false once the last successful renewal is older than the renew deadline, before
//     any other member may consider this one dead.
//
// A Member is a controller-runtime Runnable (mgr.Add(member)) and safe for concurrent use.
type Member struct {
	c         client.Client
	ring      string
	name      string
	namespace string
	cfg       memberConfig

	mu        sync.Mutex
	lastRenew time.Time // when the last successful renewal was sent; zero: not holding
	// written is the Lease as this member's last write left it: the next renewal and the release
	// start from it, not from a cache that may not show that write yet (a stale resourceVersion
	// would conflict).
	written *coordinationv1.Lease
	seen    map[string]observation
}

// observation is what this replica last saw of a member's Lease, and when it saw it change.
type observation struct {
	resourceVersion string
	holder          string
	changed         time.Time
}

// NewMember returns the member name of ring, whose Lease lives in namespace; c reads and writes
// Leases (the manager's client, or one that reads from the API server).
func NewMember(c client.Client, ring, name, namespace string, opts ...MemberOption) *Member {
	cfg := memberConfig{leaseDuration: DefaultLeaseDuration, renewDeadline: DefaultRenewDeadline, retryPeriod: DefaultRetryPeriod, clock: clock.RealClock{}}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.joinDelay <= 0 {
		cfg.joinDelay = 2 * cfg.retryPeriod
	}
	if cfg.resync <= 0 {
		cfg.resync = time.Minute
	}
	return &Member{c: c, ring: ring, name: name, namespace: namespace, cfg: cfg, seen: map[string]observation{}}
}

// Name returns the member's name.
func (m *Member) Name() string { return m.name }

// LeaseName returns the name of the member's Lease.
func (m *Member) LeaseName() string { return m.ring + "-" + m.name }

// Start renews the member's Lease every retry period until ctx ends, then releases it (an empty
// holder, so that the others stop counting the member at once).
func (m *Member) Start(ctx context.Context) error {
	tick := m.cfg.clock.NewTicker(m.cfg.retryPeriod)
	defer tick.Stop()
	for {
		_ = m.Renew(ctx) // a failed renewal is retried; CanWrite tells the writers
		select {
		case <-ctx.Done():
			return m.release()
		case <-tick.C():
		}
	}
}

// Renew takes or renews the member's Lease once. A Lease another survivor fenced is taken back: the
// member rejoins as a new incarnation (leaseTransitions counts them). It starts from the Lease its
// last write left; when that conflicts (the Lease changed since: fenced) or is gone, it reads the
// Lease again and tries once more.
func (m *Member) Renew(ctx context.Context) error {
	err := m.renew(ctx, m.lastWritten())
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		err = m.renew(ctx, nil)
	}
	return err
}

// renew takes or renews the Lease once, from lease (as this member's last write left it) or, when
// nil, from a read.
func (m *Member) renew(ctx context.Context, lease *coordinationv1.Lease) error {
	sent := m.cfg.clock.Now()
	if lease == nil {
		lease = &coordinationv1.Lease{}
		err := m.c.Get(ctx, client.ObjectKey{Namespace: m.namespace, Name: m.LeaseName()}, lease)
		switch {
		case apierrors.IsNotFound(err):
			lease = m.newLease(sent)
			if err := m.c.Create(ctx, lease); err != nil {
				return fmt.Errorf("create lease %s/%s: %w", m.namespace, m.LeaseName(), err)
			}
			m.renewed(sent, lease)
			return nil
		case err != nil:
			return fmt.Errorf("read lease %s/%s: %w", m.namespace, m.LeaseName(), err)
		}
	}
	if holder := ptr.Deref(lease.Spec.HolderIdentity, ""); holder != m.name {
		lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
		lease.Spec.AcquireTime = &metav1.MicroTime{Time: sent}
	}
	lease.Spec.HolderIdentity = ptr.To(m.name)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(m.cfg.leaseDuration / time.Second))
	lease.Spec.RenewTime = &metav1.MicroTime{Time: sent}
	if err := m.c.Update(ctx, lease); err != nil { // resourceVersion precondition
		return fmt.Errorf("renew lease %s/%s: %w", m.namespace, m.LeaseName(), err)
	}
	m.renewed(sent, lease)
	return nil
}

// renewed records a successful renewal sent at sent, which left lease.
func (m *Member) renewed(sent time.Time, lease *coordinationv1.Lease) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastRenew = sent
	m.written = lease.DeepCopy()
}

// lastWritten returns a copy of the Lease as this member's last write left it, or nil.
func (m *Member) lastWritten() *coordinationv1.Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.written == nil {
		return nil
	}
	return m.written.DeepCopy()
}

func (m *Member) newLease(now time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.LeaseName(), Namespace: m.namespace,
			Labels: map[string]string{RingLabel: m.ring, MemberLabel: m.name},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(m.name),
			LeaseDurationSeconds: ptr.To(int32(m.cfg.leaseDuration / time.Second)),
			AcquireTime:          &metav1.MicroTime{Time: now},
			RenewTime:            &metav1.MicroTime{Time: now},
			LeaseTransitions:     ptr.To[int32](0),
		},
	}
}

// release empties the Lease's holder if this member still holds it, starting from the Lease its last
// write left; on a conflict it reads the Lease again (until the retry period passed), since a
// release that fails leaves the others waiting for the Lease to expire.
func (m *Member) release() error {
	lease := m.lastWritten()
	m.mu.Lock()
	m.lastRenew, m.written = time.Time{}, nil
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.retryPeriod)
	defer cancel()
	for {
		if lease == nil {
			lease = &coordinationv1.Lease{}
			if err := m.c.Get(ctx, client.ObjectKey{Namespace: m.namespace, Name: m.LeaseName()}, lease); err != nil {
				return client.IgnoreNotFound(err)
			}
		}
		if ptr.Deref(lease.Spec.HolderIdentity, "") != m.name {
			return nil
		}
		lease.Spec.HolderIdentity = ptr.To("")
		err := m.c.Update(ctx, lease)
		if !apierrors.IsConflict(err) {
			if err != nil {
				return fmt.Errorf("release lease %s/%s: %w", m.namespace, m.LeaseName(), err)
			}
			return nil
		}
		lease = nil // changed since: read it again, as the cache catches up
		select {
		case <-ctx.Done():
			return fmt.Errorf("release lease %s/%s: %w", m.namespace, m.LeaseName(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// CanWrite reports whether the member may write: its last successful renewal is more recent than the
// renew deadline. Every write of a sharded controller checks it first.
func (m *Member) CanWrite() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.lastRenew.IsZero() && m.cfg.clock.Since(m.lastRenew) < m.cfg.renewDeadline
}

// Observe reads the ring's Leases and returns the live members (this one included while it holds
// its Lease) and the members whose Lease expired by this replica's clock and that nobody fenced yet.
func (m *Member) Observe(ctx context.Context) (live, expired []string, err error) {
	v, err := m.view(ctx)
	if err != nil {
		return nil, nil, err
	}
	for name := range v.live {
		live = append(live, name)
	}
	slices.Sort(live)
	return live, v.expired, nil
}

// ringView is what one observation of the ring's Leases showed.
type ringView struct {
	// live maps each live member to how long it has held its Lease (since its acquireTime, by the
	// Lease's own clock: used only to delay hand-overs to a member that just joined).
	live map[string]time.Duration
	// expired are the members whose Lease expired by this replica's clock, not yet fenced.
	expired []string
}

func (m *Member) view(ctx context.Context) (ringView, error) {
	var leases coordinationv1.LeaseList
	if err := m.c.List(ctx, &leases, client.InNamespace(m.namespace), client.MatchingLabels{RingLabel: m.ring}); err != nil {
		return ringView{}, fmt.Errorf("list the leases of ring %s: %w", m.ring, err)
	}
	now := m.cfg.clock.Now()
	v := ringView{live: map[string]time.Duration{}}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range leases.Items {
		name := l.Labels[MemberLabel]
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		prev, ok := m.seen[name]
		if !ok || prev.resourceVersion != l.ResourceVersion {
			prev = observation{resourceVersion: l.ResourceVersion, holder: holder, changed: now}
			m.seen[name] = prev
		}
		switch {
		case holder != name:
			// released (""), fenced ("fenced-by-..."), or taken by something else: not a member now
		case now.Sub(prev.changed) < m.cfg.leaseDuration:
			var held time.Duration
			if l.Spec.AcquireTime != nil {
				held = now.Sub(l.Spec.AcquireTime.Time)
			}
			v.live[name] = held
		default:
			v.expired = append(v.expired, name)
		}
	}
	slices.Sort(v.expired)
	return v, nil
}

// Fence declares the member name dead: it writes "fenced-by-<this member>" as the holder of its Lease,
// under the resourceVersion this replica observed, so that exactly one survivor wins. It returns true
// when this call fenced it, false when the Lease changed meanwhile (renewed, released or fenced by
// another survivor).
func (m *Member) Fence(ctx context.Context, name string) (bool, error) {
	m.mu.Lock()
	obs, ok := m.seen[name]
	m.mu.Unlock()
	if !ok {
		return false, fmt.Errorf("fence %s: its lease was never observed; call Observe first", name)
	}
	lease := &coordinationv1.Lease{}
	if err := m.c.Get(ctx, client.ObjectKey{Namespace: m.namespace, Name: m.ring + "-" + name}, lease); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if lease.ResourceVersion != obs.resourceVersion || ptr.Deref(lease.Spec.HolderIdentity, "") != name {
		return false, nil
	}
	lease.Spec.HolderIdentity = ptr.To(fencedPrefix + m.name)
	if err := m.c.Update(ctx, lease); err != nil {
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return false, fmt.Errorf("fence %s: %w", name, err)
	}
	return true, nil
}

// FencedBy returns the survivor that fenced a Lease's holder, or "" when holder is not a fence.
func FencedBy(holder string) string {
	survivor, ok := strings.CutPrefix(holder, fencedPrefix)
	if !ok {
		return ""
	}
	return survivor
}
