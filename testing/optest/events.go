package optest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/testing/harness"
)

// Events returns the events.k8s.io events about obj: those in its namespace ("default" for a
// cluster-scoped object) whose regarding object has obj's kind (from c's scheme) and name. Events about
// another object of the same name are left out, such as those kube-apiserver's repair loops report
// about a Service named like the custom resource that owns it.
func Events(t testing.TB, c client.Client, obj client.Object) []eventsv1.Event {
	t.Helper()
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		t.Fatalf("events about %T %s: %v", obj, obj.GetName(), err)
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	var list eventsv1.EventList
	if err := c.List(context.WithoutCancel(t.Context()), &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list events in %s: %v", ns, err)
	}
	return regarding(list.Items, gvk.Kind, obj.GetName())
}

// regarding keeps the events whose regarding object has the kind and name.
func regarding(events []eventsv1.Event, kind, name string) []eventsv1.Event {
	var out []eventsv1.Event
	for _, e := range events {
		if e.Regarding.Kind == kind && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// WaitForEvent waits for an event about obj (see Events) with the given type and reason and returns
// it. On timeout the test fails with the events about obj seen last.
//
//	e := optest.WaitForEvent(t, env.Client, mc, corev1.EventTypeWarning, "InvalidSpec")
func WaitForEvent(t testing.TB, c client.Client, obj client.Object, eventType, reason string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	harness.Eventually(t, Timeout, func() (bool, string) {
		events := Events(t, c, obj)
		var seen []string
		for _, e := range events {
			if e.Type == eventType && e.Reason == reason {
				found = e
				return true, ""
			}
			seen = append(seen, e.Type+"/"+e.Reason+": "+e.Note)
		}
		return false, fmt.Sprintf("no %s event with reason %s about %s %s; events about it: %s",
			eventType, reason, harness.KindOf(c, obj), client.ObjectKeyFromObject(obj), strings.Join(seen, "; "))
	})
	return found
}
