package builders

import (
	"errors"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The recommended labels (https://kubernetes.io/docs/concepts/overview/working-with-objects/common-labels/).
const (
	// NameLabel is the name of the application, e.g. "memcached".
	NameLabel = "app.kubernetes.io/name"
	// InstanceLabel identifies one instance of the application, usually the owner's name.
	InstanceLabel = "app.kubernetes.io/instance"
	// ComponentLabel is the role of the object within the application, e.g. "cache".
	ComponentLabel = "app.kubernetes.io/component"
	// PartOfLabel names the higher-level application this one is part of.
	PartOfLabel = "app.kubernetes.io/part-of"
	// ManagedByLabel names the tool (the operator) that manages the object.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// VersionLabel is the version of the application, e.g. "1.6.21". It is never part of a selector.
	VersionLabel = "app.kubernetes.io/version"
)

// Labels is the standard label set of one application instance. Empty fields are left out.
//
// All is put on every object and pod template; Selector, a subset that never changes across
// versions of the application, selects the pods. Name and Instance should always be set: a
// Deployment, StatefulSet or Service with an empty selector is rejected or selects nothing.
type Labels struct {
	// Name is app.kubernetes.io/name.
	Name string
	// Instance is app.kubernetes.io/instance.
	Instance string
	// Component is app.kubernetes.io/component.
	Component string
	// PartOf is app.kubernetes.io/part-of.
	PartOf string
	// ManagedBy is app.kubernetes.io/managed-by.
	ManagedBy string
	// Version is app.kubernetes.io/version; it is on objects and pods but never in a selector.
	Version string
}

// All returns every non-empty standard label, or nil when all are empty.
func (l Labels) All() map[string]string {
	return nonEmpty(map[string]string{
		NameLabel:      l.Name,
		InstanceLabel:  l.Instance,
		ComponentLabel: l.Component,
		PartOfLabel:    l.PartOf,
		ManagedByLabel: l.ManagedBy,
		VersionLabel:   l.Version,
	})
}

// Selector returns the stable subset of the labels used to select pods: name, instance and
// component (those that are set). It never includes the version, part-of or managed-by, so it
// stays the same across upgrades of the application and of the operator; a Deployment's and a
// StatefulSet's selector is immutable.
func (l Labels) Selector() map[string]string {
	return nonEmpty(map[string]string{
		NameLabel:      l.Name,
		InstanceLabel:  l.Instance,
		ComponentLabel: l.Component,
	})
}

// Meta returns object metadata with the given name and namespace and all the standard labels.
func (l Labels) Meta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: l.All()}
}

// Validate reports every label value the API server would reject (too long, or characters
// outside [A-Za-z0-9._-]), and an empty selector (neither Name nor Instance nor Component set).
// Values computed from user input, such as a version taken from an image tag, are worth
// validating before they reach the API server.
func (l Labels) Validate() error {
	var errs []error
	keys := []string{NameLabel, InstanceLabel, ComponentLabel, PartOfLabel, ManagedByLabel, VersionLabel}
	all := l.All()
	for _, k := range keys {
		v, ok := all[k]
		if !ok {
			continue
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, fmt.Errorf("label %s=%q: %s", k, v, msg))
		}
	}
	if len(l.Selector()) == 0 {
		errs = append(errs, errors.New("empty selector: set at least Name and Instance"))
	}
	return errors.Join(errs...)
}

// nonEmpty drops the entries with an empty value; it returns nil when nothing is left.
func nonEmpty(m map[string]string) map[string]string {
	maps.DeleteFunc(m, func(_, v string) bool { return v == "" })
	if len(m) == 0 {
		return nil
	}
	return m
}

// merged returns a new map with base's entries overridden by over's, or nil when both are empty.
func merged(base, over map[string]string) map[string]string {
	if len(base)+len(over) == 0 {
		return nil
	}
	out := make(map[string]string, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}
