package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/builders"
)

// check is a readiness rule the plugin can run on any live object, with the name the output shows.
type check struct {
	name string
	fn   func(client.Object) (ready bool, reason string)
}

// checksByKind are the rules for kinds whose status tells readiness without conditions.
var checksByKind = map[schema.GroupKind]check{
	{Group: "apps", Kind: "Deployment"}:  {"DeploymentAvailable", builders.DeploymentAvailable},
	{Group: "apps", Kind: "StatefulSet"}: {"StatefulSetReady", builders.StatefulSetReady},
	{Group: "apps", Kind: "DaemonSet"}:   {"DaemonSetReady", daemonSetReady},
	{Group: "batch", Kind: "Job"}:        {"JobComplete", builders.JobComplete},
	{Group: "", Kind: "Service"}:         {"ServiceReady", builders.ServiceReady},
}

// readyConditionTypes are the condition types builders.ConditionsReady takes as readiness.
var readyConditionTypes = []string{"Ready", "Established", "Available"}

// judge tells whether the live object obj is ready, and names the rule that said so: a child being
// deleted is not ready ("deleting"); a kind of checksByKind is judged by its check; an object with a
// Ready condition (Established, Available) by builders.ConditionsReady; anything else is ready
// because it exists.
func judge(obj *unstructured.Unstructured) (ready bool, checkName, reason string) {
	if obj.GetDeletionTimestamp() != nil {
		return false, "deleting", "being deleted"
	}
	c, ok := checksByKind[obj.GroupVersionKind().GroupKind()]
	if !ok && hasReadyCondition(obj) {
		c, ok = check{"ConditionsReady", builders.ConditionsReady}, true
	}
	if !ok {
		return true, "exists", ""
	}
	ready, reason = c.fn(obj)
	if ready {
		reason = ""
	}
	return ready, c.name, reason
}

// hasReadyCondition reports whether obj has a status condition of a type in readyConditionTypes.
func hasReadyCondition(obj *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		for _, t := range readyConditionTypes {
			if m["type"] == t {
				return true
			}
		}
	}
	return false
}

// daemonSetReady reports whether a DaemonSet has finished rolling out, as kstatus judges it: its
// controller has observed the current generation, and every node that should run its pod runs an
// updated, available one.
func daemonSetReady(live client.Object) (bool, string) {
	u, ok := live.(*unstructured.Unstructured)
	if !ok {
		return false, fmt.Sprintf("expected an unstructured DaemonSet, got %T", live)
	}
	status := func(field string) int64 {
		v, _, _ := unstructured.NestedInt64(u.Object, "status", field)
		return v
	}
	if observed := status("observedGeneration"); observed < u.GetGeneration() {
		return false, fmt.Sprintf("waiting for observedGeneration %d (at %d)", u.GetGeneration(), observed)
	}
	want := status("desiredNumberScheduled")
	switch {
	case status("updatedNumberScheduled") < want:
		return false, fmt.Sprintf("%d/%d pods updated", status("updatedNumberScheduled"), want)
	case status("numberAvailable") < want:
		return false, fmt.Sprintf("%d/%d pods available", status("numberAvailable"), want)
	}
	return true, ""
}
