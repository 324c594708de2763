//go:build integration

package reconcile_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/optest"
)

// TestIntegrationReferencesWake: with WithReferences, a Secret a Widget names wakes that Widget when
// it is created, changed or deleted, and leaves a Widget naming another Secret alone.
func TestIntegrationReferencesWake(t *testing.T) {
	recs := optest.NewReconciles()
	wt := newObservedWidgetTest(t, reconcile.Hooks[*testapi.Widget]{}, recs.Observe,
		reconcile.WithReferences(&corev1.Secret{}, func(w *testapi.Widget) []string { return []string{w.Spec.Data["secret"]} }))
	named := wt.create(t, "named", testapi.WidgetSpec{Data: map[string]string{"secret": "creds"}})
	other := wt.create(t, "other", testapi.WidgetSpec{Data: map[string]string{"secret": "else"}})
	for _, w := range []*testapi.Widget{named, other} {
		wt.annotateReadyWhenCreated(t, w.Name+"-config")
		wt.waitWidget(t, w, w.Name+" ready", func(w *testapi.Widget) bool { return apimeta.IsStatusConditionTrue(w.Status.Conditions, status.Ready) })
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: wt.ns, Name: "creds"}, StringData: map[string]string{"k": "v"}}
	steps := []struct {
		name string
		do   func() error
	}{
		{"created", func() error { return wt.client.Create(t.Context(), secret) }},
		{"changed", func() error {
			secret.StringData = map[string]string{"k": "w"}
			return wt.client.Update(t.Context(), secret)
		}},
		{"deleted", func() error { return wt.client.Delete(t.Context(), secret) }},
	}
	for _, step := range steps {
		since := recs.Mark()
		if err := step.do(); err != nil {
			t.Fatalf("secret %s: %v", step.name, err)
		}
		recs.WaitFor(t, client.ObjectKeyFromObject(named), since, optest.Timeout)
		if diff := cmp.Diff(0, len(recs.Since(client.ObjectKeyFromObject(other), since))); diff != "" {
			t.Errorf("secret %s: reconciles of the widget naming another secret (-want +got):\n%s", step.name, diff)
		}
	}
}
