package builders

import (
	"fmt"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// The readiness checks below have the shape func(live client.Object) (ready bool, reason string),
// which is graph.ReadyCheck: pass them to Node.ReadyWhen as they are. Each accepts its typed
// object or the same object as *unstructured.Unstructured, and explains in reason, when not
// ready, what it is waiting for. A nil object, or one of another kind, is not ready.

var (
	deploymentKind  = schema.GroupKind{Group: appsv1.GroupName, Kind: "Deployment"}
	statefulSetKind = schema.GroupKind{Group: appsv1.GroupName, Kind: "StatefulSet"}
	serviceKind     = schema.GroupKind{Group: corev1.GroupName, Kind: "Service"}
	jobKind         = schema.GroupKind{Group: batchv1.GroupName, Kind: "Job"}
)

// DeploymentAvailable reports whether a Deployment has finished rolling out: its controller has
// observed the current generation, the progress deadline has not been exceeded, every desired
// replica runs the current template and is available, and no old replica is left.
func DeploymentAvailable(live client.Object) (ready bool, reason string) {
	d, reason := decode[appsv1.Deployment](live, deploymentKind)
	if d == nil {
		return false, reason
	}
	if d.Generation > d.Status.ObservedGeneration {
		return false, waitingForGeneration(d.Generation, d.Status.ObservedGeneration)
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return false, "progress deadline exceeded: " + c.Message
		}
	}
	want, st := ptr.Deref(d.Spec.Replicas, 1), d.Status
	switch {
	case st.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d/%d replicas updated", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas pending termination", st.Replicas-st.UpdatedReplicas)
	case st.Replicas > want:
		return false, fmt.Sprintf("scaling down: %d replicas, want %d", st.Replicas, want)
	case st.AvailableReplicas < want:
		return false, fmt.Sprintf("%d/%d replicas available", st.AvailableReplicas, want)
	}
	return true, ""
}

// StatefulSetReady reports whether a StatefulSet has finished rolling out: its controller has
// observed the current generation, it runs exactly the desired number of pods, all ready and
// available, and (with the RollingUpdate strategy) all on the current revision, or, with a
// partition, all those at or above the partition ordinal. With the OnDelete strategy the
// revision is not checked, since pods are replaced only when someone deletes them.
func StatefulSetReady(live client.Object) (ready bool, reason string) {
	s, reason := decode[appsv1.StatefulSet](live, statefulSetKind)
	if s == nil {
		return false, reason
	}
	if s.Generation > s.Status.ObservedGeneration {
		return false, waitingForGeneration(s.Generation, s.Status.ObservedGeneration)
	}
	want, st := ptr.Deref(s.Spec.Replicas, 1), s.Status
	switch {
	case st.Replicas > want:
		return false, fmt.Sprintf("scaling down: %d replicas, want %d", st.Replicas, want)
	case st.ReadyReplicas < want:
		return false, fmt.Sprintf("%d/%d replicas ready", st.ReadyReplicas, want)
	case st.AvailableReplicas < want:
		return false, fmt.Sprintf("%d/%d replicas available", st.AvailableReplicas, want)
	}
	if s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return true, ""
	}
	partition := int32(0)
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		partition = ptr.Deref(ru.Partition, 0)
	}
	if partition > 0 {
		if wantUpdated := want - partition; st.UpdatedReplicas < wantUpdated {
			return false, fmt.Sprintf("%d/%d replicas above partition %d updated", st.UpdatedReplicas, wantUpdated, partition)
		}
		return true, ""
	}
	if st.UpdateRevision != st.CurrentRevision {
		return false, fmt.Sprintf("rolling update to revision %s: %d/%d replicas updated", st.UpdateRevision, st.UpdatedReplicas, want)
	}
	return true, ""
}

// ServiceReady reports whether a Service can be used: an ExternalName Service always; any other
// once it has a cluster IP ("None" for a headless Service counts), and a LoadBalancer Service
// once its load balancer reports an ingress address.
func ServiceReady(live client.Object) (ready bool, reason string) {
	s, reason := decode[corev1.Service](live, serviceKind)
	if s == nil {
		return false, reason
	}
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		return true, ""
	}
	if s.Spec.ClusterIP == "" {
		return false, "no cluster IP yet"
	}
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer && len(s.Status.LoadBalancer.Ingress) == 0 {
		return false, "waiting for load balancer ingress"
	}
	return true, ""
}

// JobComplete reports whether a Job has completed (condition Complete=True). A failed Job is not
// ready, with the failure as the reason; so is a suspended one.
func JobComplete(live client.Object) (ready bool, reason string) {
	j, reason := decode[batchv1.Job](live, jobKind)
	if j == nil {
		return false, reason
	}
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, ""
		case batchv1.JobFailed:
			return false, "job failed: " + describe(c.Reason, c.Message)
		}
	}
	if ptr.Deref(j.Spec.Suspend, false) {
		return false, "job suspended"
	}
	if j.Spec.Completions != nil {
		return false, fmt.Sprintf("%d/%d completions succeeded, %d active", j.Status.Succeeded, *j.Spec.Completions, j.Status.Active)
	}
	return false, fmt.Sprintf("running: %d succeeded, %d active", j.Status.Succeeded, j.Status.Active)
}

// readyConditionByKind is the condition that means ready for kinds that have no Ready condition
// and no dedicated check here.
var readyConditionByKind = map[schema.GroupKind]string{
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: "Established",
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:             "Available",
}

// ConditionsReady is a readiness check for any object, following kstatus
// (sigs.k8s.io/cli-utils/pkg/kstatus):
//
//   - a Deployment, StatefulSet, Service or Job is checked by DeploymentAvailable,
//     StatefulSetReady, ServiceReady or JobComplete, as kstatus does for built-in kinds;
//   - any other object is not ready while status.observedGeneration is behind
//     metadata.generation, while the abnormal-true conditions Stalled or Reconciling are True, or
//     until its Ready condition (Established for a CustomResourceDefinition, Available for an
//     APIService) is True and, when that condition carries an observedGeneration, it is the
//     current generation.
//
// Unlike kstatus, an object without that condition is not ready: an empty status usually means
// that its controller has not seen the object yet. Use ConditionsReady for custom resources
// whose controllers report kstatus conditions, such as those of reconcile.Reconciler.
//
// The kind comes from the Go type for the types of the client-go scheme (a typed object read by a
// client has no TypeMeta), else from the object's apiVersion and kind.
func ConditionsReady(live client.Object) (ready bool, reason string) {
	if isNil(live) {
		return false, "not observed yet"
	}
	gk := groupKind(live)
	switch gk {
	case deploymentKind:
		return DeploymentAvailable(live)
	case statefulSetKind:
		return StatefulSetReady(live)
	case serviceKind:
		return ServiceReady(live)
	case jobKind:
		return JobComplete(live)
	}
	content, err := contentOf(live)
	if err != nil {
		return false, err.Error()
	}
	generation := live.GetGeneration()
	if observed, ok := int64At(content, "status", "observedGeneration"); ok && observed < generation {
		return false, waitingForGeneration(generation, observed)
	}
	conds := conditionsOf(content)
	if c, ok := conds["Stalled"]; ok && c.status == "True" {
		return false, "stalled: " + describe(c.reason, c.message)
	}
	if c, ok := conds["Reconciling"]; ok && c.status == "True" {
		return false, "reconciling: " + describe(c.reason, c.message)
	}
	readyType := "Ready"
	if _, ok := conds[readyType]; !ok {
		if t, ok := readyConditionByKind[gk]; ok {
			readyType = t
		}
	}
	c, ok := conds[readyType]
	switch {
	case !ok:
		return false, fmt.Sprintf("no %s condition yet", readyType)
	case c.observedGeneration != 0 && c.observedGeneration < generation:
		return false, fmt.Sprintf("%s condition is for generation %d, waiting for %d", readyType, c.observedGeneration, generation)
	case c.status != "True":
		return false, fmt.Sprintf("%s=%s: %s", readyType, c.status, describe(c.reason, c.message))
	}
	return true, ""
}

// condition is the part of any kind's status condition that readiness depends on.
type condition struct {
	status, reason, message string
	observedGeneration      int64
}

// conditionsOf reads status.conditions by type.
func conditionsOf(content map[string]any) map[string]condition {
	list, _, _ := unstructured.NestedSlice(content, "status", "conditions")
	out := make(map[string]condition, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["type"].(string)
		if t == "" {
			continue
		}
		c := condition{}
		c.status, _ = m["status"].(string)
		c.reason, _ = m["reason"].(string)
		c.message, _ = m["message"].(string)
		c.observedGeneration, _ = int64At(m, "observedGeneration")
		out[t] = c
	}
	return out
}

// int64At reads an integer field that may be held as any Go number type.
func int64At(obj map[string]any, fields ...string) (int64, bool) {
	v, ok, err := unstructured.NestedFieldNoCopy(obj, fields...)
	if !ok || err != nil {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		return int64(n), true
	}
	return 0, false
}

// contentOf returns the JSON-shaped content of obj (not a copy for unstructured objects).
func contentOf(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(runtime.Unstructured); ok {
		return u.UnstructuredContent(), nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("read status of %T: %w", obj, err)
	}
	return content, nil
}

// groupKind returns obj's group and kind: an unstructured object's own, else the kind the
// client-go scheme knows for its Go type, else its TypeMeta.
func groupKind(obj client.Object) schema.GroupKind {
	if _, ok := obj.(runtime.Unstructured); !ok {
		if gvk, err := apiutil.GVKForObject(obj, clientgoscheme.Scheme); err == nil {
			return gvk.GroupKind()
		}
	}
	return obj.GetObjectKind().GroupVersionKind().GroupKind()
}

// decode returns live as a *T: live itself when it is one, or a conversion when it is an
// unstructured object of kind gk. Otherwise it returns nil and why.
func decode[T any, PT interface {
	*T
	client.Object
}](live client.Object, gk schema.GroupKind) (PT, string) {
	if isNil(live) {
		return nil, "not observed yet"
	}
	switch o := live.(type) {
	case PT:
		return o, ""
	case *unstructured.Unstructured:
		if got := o.GroupVersionKind().GroupKind(); got != gk {
			return nil, fmt.Sprintf("expected a %s, got %s", gk, got)
		}
		var out PT = new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
			return nil, fmt.Sprintf("decode %s %s: %v", gk.Kind, client.ObjectKeyFromObject(o), err)
		}
		return out, ""
	}
	return nil, fmt.Sprintf("expected a %s, got %T", gk, live)
}

func waitingForGeneration(generation, observed int64) string {
	return fmt.Sprintf("waiting for observedGeneration %d (at %d)", generation, observed)
}

// describe joins a condition's reason and message for a reason string.
func describe(reason, message string) string {
	parts := make([]string, 0, 2)
	for _, s := range []string{reason, message} {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return "no reason given"
	}
	return strings.Join(parts, ": ")
}

// isNil reports whether obj is nil or a nil pointer.
func isNil(obj client.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
