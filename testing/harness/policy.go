package harness

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BindAdmissionPolicy puts a MutatingAdmissionPolicy to work in namespace ns only: it creates the
// policy (an existing one of the same name is kept), binds it with a binding of its own for ns, and
// waits until the API server applies it, which it does once its informers have seen both: until an
// object created from probe (a copy, with a generated name, in ns) comes back with applied(object)
// true. Probes are deleted at once, their finalizers cleared first. The returned function deletes the
// binding (the policy stays, for other namespaces' bindings). It gives up when ctx ends.
//
// Tests share one API server, so a cluster-wide binding would reach the objects of every test; one
// binding per test namespace reaches only its own. Install it before the operator starts, so that the
// operator does not act on the probes.
func BindAdmissionPolicy(ctx context.Context, c client.Client, policy *admissionregistrationv1.MutatingAdmissionPolicy, ns string,
	probe client.Object, applied func(client.Object) bool) (remove func(context.Context) error, err error) {
	if err := c.Create(ctx, policy.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create admission policy %s: %w", policy.Name, err)
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name + "." + ns},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: policy.Name,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	if err := c.Create(ctx, binding); err != nil {
		return nil, fmt.Errorf("bind admission policy %s to namespace %s: %w", policy.Name, ns, err)
	}
	remove = func(ctx context.Context) error {
		if err := c.Delete(ctx, binding); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete admission policy binding %s: %w", binding.Name, err)
		}
		return nil
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := probeOnce(ctx, c, probe, ns, applied)
		switch {
		case meta.IsNoMatchError(err), apierrors.IsServiceUnavailable(err):
			// The probe's kind is not served yet, or the API server's admission has not loaded its
			// schema yet (503 for a few seconds after a CRD is created): try again.
		case err != nil:
			return remove, fmt.Errorf("probe admission policy %s: %w", policy.Name, err)
		case ok:
			return remove, nil
		}
		select {
		case <-ctx.Done():
			return remove, fmt.Errorf("admission policy %s not applied in namespace %s: %w", policy.Name, ns, ctx.Err())
		case <-tick.C:
		}
	}
}

// probeOnce creates a copy of probe in ns, reports whether the API server's answer satisfies applied,
// and deletes the copy.
func probeOnce(ctx context.Context, c client.Client, probe client.Object, ns string, applied func(client.Object) bool) (bool, error) {
	p, ok := probe.DeepCopyObject().(client.Object)
	if !ok {
		return false, fmt.Errorf("probe %T is not a client.Object", probe)
	}
	p.SetNamespace(ns)
	p.SetName("")
	p.SetGenerateName("policy-probe-")
	p.SetResourceVersion("")
	if err := c.Create(ctx, p); err != nil {
		return false, fmt.Errorf("create probe: %w", err) // wrapped: the caller looks for a kind not served yet
	}
	ok = applied(p)
	if len(p.GetFinalizers()) > 0 {
		if err := c.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("clear the probe's finalizers: %w", err)
		}
	}
	if err := c.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("delete probe: %w", err)
	}
	return ok, nil
}

// BindAdmissionPolicy is the package's BindAdmissionPolicy for a test: bound to namespace ns through
// the Env's client within timeout, the binding deleted when the test ends; a policy the API server
// does not apply in time fails the test.
func (e *Env) BindAdmissionPolicy(t testing.TB, policy *admissionregistrationv1.MutatingAdmissionPolicy, ns string,
	probe client.Object, applied func(client.Object) bool, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	remove, err := BindAdmissionPolicy(ctx, e.Client, policy, ns, probe, applied)
	if remove != nil {
		t.Cleanup(func() {
			if err := remove(context.WithoutCancel(t.Context())); err != nil {
				t.Error(err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
}
