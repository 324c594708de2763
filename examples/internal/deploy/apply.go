package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pollInterval is how often the waits look again.
const pollInterval = 250 * time.Millisecond

// Apply applies objs with server-side apply as FieldOwner, taking over fields another manager holds
// (as kubectl apply --server-side --force-conflicts does), in the order given (Load's install order),
// and returns the objects as the API server answered. objs are not changed. A kind the API server does
// not serve yet (a custom resource right after its definition) is retried until timeout.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, timeout time.Duration) ([]*unstructured.Unstructured, error) {
	var applied []*unstructured.Unstructured
	for _, o := range objs {
		var live *unstructured.Unstructured
		var last error
		err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
			live = o.DeepCopy()
			last = c.Apply(ctx, client.ApplyConfigurationFromUnstructured(live), client.FieldOwner(FieldOwner), client.ForceOwnership)
			if last == nil {
				return true, nil
			}
			return false, retryable(last)
		})
		if err != nil {
			if last != nil {
				err = last
			}
			return nil, fmt.Errorf("server-side apply %s: %w", objectID(o), err)
		}
		applied = append(applied, live)
	}
	return applied, nil
}

// retryable returns nil for the errors of a kind that is not served yet (a RESTMapper or API server
// that has not caught up with a new CRD; an admission policy bound to the kind answers 503 until the
// API server has loaded the CRD's schema for admission, which it looks for every 5 seconds), err
// otherwise, a missing namespace among them.
func retryable(err error) error {
	if meta.IsNoMatchError(err) || apierrors.IsServiceUnavailable(err) {
		return nil
	}
	var status apierrors.APIStatus
	if apierrors.IsNotFound(err) && errors.As(err, &status) {
		if d := status.Status().Details; d != nil && d.Kind == "namespaces" {
			return fmt.Errorf("%w: create the namespace first", err)
		}
		return nil
	}
	return err
}

// WaitEstablished waits until every CRD in crds is Established, so that its kinds can be served.
func WaitEstablished(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	for _, crd := range crds {
		state := "not found"
		err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
			var live apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &live); err != nil {
				state = errorState(ctx, err, state)
				return false, nil
			}
			state = "no Established condition yet"
			for _, cond := range live.Status.Conditions {
				if cond.Type == apiextensionsv1.Established {
					state = fmt.Sprintf("Established=%s (%s: %s)", cond.Status, cond.Reason, cond.Message)
					return cond.Status == apiextensionsv1.ConditionTrue, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("wait for CustomResourceDefinition %s to be established (last: %s): %w", crd.Name, state, err)
		}
	}
	return nil
}

// WaitAvailable waits until the Deployment key is Available for its current generation and returns it.
// On timeout the error holds its conditions and the state of its pods (an image that cannot be pulled
// shows there).
func WaitAvailable(ctx context.Context, c client.Client, key client.ObjectKey, timeout time.Duration) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	state := "not found"
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, &d); err != nil {
			state = errorState(ctx, err, state)
			return false, nil
		}
		state = fmt.Sprintf("observedGeneration %d of %d, %d/%d available, conditions %s",
			d.Status.ObservedGeneration, d.Generation, d.Status.AvailableReplicas, ptrOr(d.Spec.Replicas, 1), deploymentConditions(&d))
		for _, cond := range d.Status.Conditions {
			if cond.Type == appsv1.DeploymentAvailable {
				return cond.Status == corev1.ConditionTrue && d.Status.ObservedGeneration >= d.Generation, nil
			}
		}
		return false, nil
	})
	if err != nil {
		pods := podStates(context.WithoutCancel(ctx), c, &d)
		return nil, fmt.Errorf("wait for Deployment %s to be Available (last: %s; pods: %s): %w", key, state, pods, err)
	}
	return &d, nil
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

func deploymentConditions(d *appsv1.Deployment) string {
	var out []string
	for _, c := range d.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// podStates describes the pods of d: phase, node and the reason a container waits.
func podStates(ctx context.Context, c client.Client, d *appsv1.Deployment) string {
	pods, err := podsOf(ctx, c, d)
	if err != nil {
		return err.Error()
	}
	if len(pods) == 0 {
		return "none"
	}
	var out []string
	for _, p := range pods {
		s := fmt.Sprintf("%s %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting != nil {
				s += fmt.Sprintf(", %s waiting: %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// podsOf lists the pods of d's selector in its namespace.
func podsOf(ctx context.Context, c client.Client, d *appsv1.Deployment) ([]corev1.Pod, error) {
	if d.Spec.Selector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s selector: %w", d.Name, err)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("list pods of deployment %s: %w", d.Name, err)
	}
	return pods.Items, nil
}

// KwokNodeAnnotation marks the fake nodes of kwok (the local cluster of testing/cluster and the demo):
// their pods are reported Running and Ready, but nothing runs them.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// OnFakeNodes reports whether every running pod of d is on a kwok fake node, where no container really
// runs. It is false when d has no pod on a node.
func OnFakeNodes(ctx context.Context, c client.Client, d *appsv1.Deployment) (bool, error) {
	pods, err := podsOf(ctx, c, d)
	if err != nil {
		return false, err
	}
	fake := false
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		var node corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &node); err != nil {
			return false, fmt.Errorf("get node %s of pod %s: %w", p.Spec.NodeName, p.Name, err)
		}
		if _, ok := node.Annotations[KwokNodeAnnotation]; !ok {
			return false, nil
		}
		fake = true
	}
	return fake, nil
}

// WaitReady waits until every object in objs reports the condition Ready=True for its current
// generation (observedGeneration), as the examples' operators do once converged.
func WaitReady(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, timeout time.Duration) error {
	for _, o := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		state := "not found"
		err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
				state = errorState(ctx, err, state)
				return false, nil
			}
			ready, s := readyCondition(live)
			state = s
			return ready, nil
		})
		if err != nil {
			return fmt.Errorf("wait for %s to be Ready (last: %s): %w", objectID(o), state, err)
		}
	}
	return nil
}

// readyCondition reports whether u's Ready condition is True for its generation, and describes its
// conditions.
func readyCondition(u *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var desc []string
	ready := false
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := m["type"].(string)
		status, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		gen, _ := m["observedGeneration"].(int64)
		desc = append(desc, fmt.Sprintf("%s=%s (%s, generation %d)", typ, status, reason, gen))
		if typ == "Ready" && status == "True" && gen == u.GetGeneration() {
			ready = true
		}
	}
	if len(desc) == 0 {
		return false, fmt.Sprintf("no conditions at generation %d", u.GetGeneration())
	}
	return ready, fmt.Sprintf("generation %d: %s", u.GetGeneration(), strings.Join(desc, ", "))
}

// Delete deletes objs (in the reverse of the given order), in the background (dependents are
// garbage-collected). An object already gone is no error.
func Delete(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	var errs []error
	for _, o := range slices.Backward(objs) {
		err := c.Delete(ctx, o.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			errs = append(errs, fmt.Errorf("delete %s: %w", objectID(o), err))
		}
	}
	return errors.Join(errs...)
}

// WaitGone waits until none of objs exists. On timeout the error names those left and their
// finalizers.
func WaitGone(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, timeout time.Duration) error {
	var left []string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		var now []string
		defer func() {
			if ctx.Err() == nil {
				left = now
			}
		}()
		for _, o := range objs {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(o.GroupVersionKind())
			err := c.Get(ctx, client.ObjectKeyFromObject(o), live)
			switch {
			case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
				continue
			case err != nil && ctx.Err() != nil:
				return false, nil // the wait ends; keep what was last seen
			case err != nil:
				now = append(now, fmt.Sprintf("%s (%v)", objectID(o), err))
			default:
				now = append(now, fmt.Sprintf("%s (finalizers %v)", objectID(o), live.GetFinalizers()))
			}
		}
		return len(now) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("wait for deletion: still there: %s: %w", strings.Join(left, ", "), err)
	}
	return nil
}

// ListAll lists every object of the kind served by crd (its storage version), in all namespaces.
func ListAll(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) ([]*unstructured.Unstructured, error) {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			version = v.Name
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.ListKind})
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list %s: %w", crd.Spec.Names.Plural, err)
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
		out[i].SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind})
	}
	return out, nil
}

// OtherManagers returns the managers other than FieldOwner that own fields of obj itself (not of a
// subresource such as status): others that applied or created it too, such as the demo, which installs
// the examples' CRDs itself.
func OtherManagers(obj metav1.Object) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		if e.Manager == FieldOwner || e.Subresource != "" || slices.Contains(out, e.Manager) {
			continue
		}
		out = append(out, e.Manager)
	}
	return out
}

// errorState is what a wait reports as the last state after a failed read: the error, unless the wait
// itself has ended (its deadline makes every read fail), when the state seen before is more telling.
func errorState(ctx context.Context, err error, last string) string {
	if ctx.Err() != nil {
		return last
	}
	return err.Error()
}
