//go:build integration

package reliability_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/internal/reliability"
	memcachedv1 "github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	welcomev1 "github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
)

// quietWindow is how long a stalled object is watched for writes: an operator that loops hot on a bad
// spec writes many times a second.
const quietWindow = 3 * time.Second

// TestRuntimeInvalidSpecsRecover creates objects the API server accepts but that cannot work as they
// are: a Welcome naming a Secret that does not exist, two Welcomes asking for the same node port, a
// Memcached whose memory limit is smaller than its cache, one whose requests exceed its limits. Each
// gets Stalled=True or Reconciling=True with a reason (never Ready), the operator does not write in a
// loop while it waits (stalled ones not at all), and each becomes Ready once the problem is fixed, with
// the usual guarantees (Audit) for every object.
func TestRuntimeInvalidSpecsRecover(t *testing.T) {
	type fix struct {
		name   string
		change func(client.Object)
	}
	nodePort := freeNodePortPair(t)
	cases := map[string]struct {
		op *reliability.Operator
		// objs are created in order; the last one is the one that cannot work.
		objs []client.Object
		// wantCondition and wantReason describe the bad object's state: Stalled or Reconciling.
		wantCondition, wantReason string
		// wantMessage is part of the condition's message: the user learns what is wrong.
		wantMessage string
		// quiet: no write at all while stalled (a stalled object is not retried until its spec
		// changes); otherwise a retry with backoff is allowed (a few writes).
		quiet bool
		// secret, when set, is created to fix the problem; otherwise fix changes the bad object.
		secret *corev1.Secret
		fix    func(client.Object)
	}{
		"welcome: password Secret missing": {
			op: reliability.Welcome,
			objs: []client.Object{&welcomev1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "no-secret"}, Spec: welcomev1.WelcomeSpec{
				Name: "Bob", PasswordSecretRef: &welcomev1.SecretKeyRef{Name: "bob-password", Key: "password"},
			}}},
			wantCondition: status.Stalled, wantReason: "SecretNotFound", wantMessage: `"bob-password"`, quiet: true,
			secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bob-password"}, StringData: map[string]string{"password": "x"}},
		},
		"welcome: node port already allocated": {
			op: reliability.Welcome,
			objs: []client.Object{
				&welcomev1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "first"}, Spec: welcomev1.WelcomeSpec{
					Name: "First", ServiceType: corev1.ServiceTypeNodePort, NodePort: ptr.To(nodePort),
				}},
				&welcomev1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "second"}, Spec: welcomev1.WelcomeSpec{
					Name: "Second", ServiceType: corev1.ServiceTypeNodePort, NodePort: ptr.To(nodePort),
				}},
			},
			wantCondition: status.Reconciling, wantReason: "ApplyFailed", wantMessage: "already allocated",
			fix: func(o client.Object) { o.(*welcomev1.Welcome).Spec.NodePort = ptr.To(nodePort + 1) },
		},
		"memcached: memory limit below the cache size": {
			op: reliability.Memcached,
			objs: []client.Object{&memcachedv1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: "small-limit"}, Spec: memcachedv1.MemcachedSpec{
				Size: 1, CacheSizeMB: 256,
				Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
			}}},
			wantCondition: status.Stalled, wantReason: "InvalidSpec", wantMessage: "smaller than spec.cacheSizeMB", quiet: true,
			fix: func(o client.Object) {
				o.(*memcachedv1.Memcached).Spec.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("320Mi")
			},
		},
		"memcached: requests above limits": {
			op: reliability.Memcached,
			objs: []client.Object{&memcachedv1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: "requests-above"}, Spec: memcachedv1.MemcachedSpec{
				Size: 1, CacheSizeMB: 64,
				Resources: &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
				},
			}}},
			wantCondition: status.Stalled, wantReason: "InvalidSpec", wantMessage: "exceeds spec.resources.limits.cpu", quiet: true,
			fix: func(o client.Object) {
				o.(*memcachedv1.Memcached).Spec.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("250m")
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env := harness.Default()
			ns := env.Namespace(t)
			m := reliability.StartManager(t, env.Config, env.Scheme, tc.op.Setup, reliability.WithName(tc.op.Name), reliability.WithNamespace(ns))
			reliability.DeleteAtCleanup(t, env.Client, tc.op, ns)
			for i, o := range tc.objs {
				o.SetNamespace(ns)
				if err := env.Client.Create(t.Context(), o); err != nil {
					t.Fatalf("create %s: %v", o.GetName(), err)
				}
				if i < len(tc.objs)-1 {
					// The objects before the last one work: wait until each is Ready, so that it holds
					// what the last one asks for too (the node port) before the last one is created.
					// Created together, several workers would let either of them win.
					waitReady(t, env.Client, tc.op, ns, o.GetName())
				}
			}
			bad := tc.objs[len(tc.objs)-1]
			key := client.ObjectKeyFromObject(bad)
			harness.Eventually(t, convergeTimeout, func() (bool, string) {
				obj, err := reliability.Get(t.Context(), env.Client, tc.op, ns, key.Name)
				if err != nil {
					return false, err.Error()
				}
				c := meta.FindStatusCondition(obj.GetConditions(), tc.wantCondition)
				ok := c != nil && c.Status == metav1.ConditionTrue && c.Reason == tc.wantReason &&
					strings.Contains(c.Message, tc.wantMessage) && c.ObservedGeneration == obj.GetGeneration() && !status.IsReady(obj)
				return ok, fmt.Sprintf("want %s=True reason %s, message containing %q, not Ready; conditions: %+v",
					tc.wantCondition, tc.wantReason, tc.wantMessage, obj.GetConditions())
			})

			// The server holds the condition before the manager's client has the answer to the write that
			// set it (the counter records a request when its response arrives): wait for that record, so
			// the quiet window starts after the write that made the object stalled or waiting.
			harness.Eventually(t, convergeTimeout, func() (bool, string) {
				n := len(m.Requests.Snapshot().Filter(func(r harness.Request) bool {
					return r.IsWrite() && r.Name == key.Name && r.Subresource == "status"
				}))
				return n > 0, fmt.Sprintf("%d status writes of %s recorded by the manager", n, key.Name)
			})
			// While it waits, the operator does not loop: stalled objects get no write at all.
			m.Requests.Reset()
			time.Sleep(quietWindow)
			writes := m.Requests.Snapshot().Filter(func(r harness.Request) bool { return r.IsWrite() && r.Name == key.Name })
			switch {
			case tc.quiet && len(writes) > 0:
				t.Errorf("%d writes in %s to a stalled object's resources:\n%s", len(writes), quietWindow, writes)
			case len(writes) > 20:
				t.Errorf("%d writes in %s while waiting: a hot loop\n%s", len(writes), quietWindow, writes)
			}

			if tc.secret != nil {
				tc.secret.Namespace = ns
				if err := env.Client.Create(t.Context(), tc.secret); err != nil {
					t.Fatal(err)
				}
			} else {
				err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
					obj, err := reliability.Get(t.Context(), env.Client, tc.op, ns, key.Name)
					if err != nil {
						return err
					}
					tc.fix(obj)
					return env.Client.Update(t.Context(), obj)
				})
				if err != nil {
					t.Fatalf("fix: %v", err)
				}
			}
			rep := reliability.WaitConverged(t, env.Client, reliability.Expectation{Operator: tc.op, Namespace: ns}, convergeTimeout)
			t.Logf("FIGURES runtime-invalid %q: %s=True/%s while broken, %d writes in %s; recovered: %s", name,
				tc.wantCondition, tc.wantReason, len(writes), quietWindow, rep)
		})
	}
}

// waitReady waits until the object name of op is Ready.
func waitReady(t *testing.T, c client.Reader, op *reliability.Operator, ns, name string) {
	t.Helper()
	harness.Eventually(t, convergeTimeout, func() (bool, string) {
		obj, err := reliability.Get(t.Context(), c, op, ns, name)
		if err != nil {
			return false, err.Error()
		}
		return status.IsReady(obj), fmt.Sprintf("want %s Ready; conditions: %+v", name, obj.GetConditions())
	})
}

// freeNodePortPair returns a node port p such that neither p nor p+1 is used by any Service.
func freeNodePortPair(t *testing.T) int32 {
	t.Helper()
	var services corev1.ServiceList
	if err := harness.Default().Client.List(t.Context(), &services); err != nil {
		t.Fatal(err)
	}
	used := map[int32]bool{}
	for _, svc := range services.Items {
		for _, p := range svc.Spec.Ports {
			used[p.NodePort] = true
		}
	}
	for {
		p := int32(30000 + rand.IntN(2700))
		if !used[p] && !used[p+1] {
			return p
		}
	}
}
