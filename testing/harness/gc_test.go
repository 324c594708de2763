//go:build integration

package harness_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/testing/harness"
)

// TestStandInForForegroundDeletion: on the plain API server an object deleted with foreground
// propagation keeps the foregroundDeletion finalizer (no garbage collector removes it); with the
// stand-in it goes.
func TestStandInForForegroundDeletion(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "foreground"}}
	if err := env.Client.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(t.Context(), cm, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	// Without the stand-in: still there, terminating, held by the finalizer.
	time.Sleep(2 * harness.PollInterval)
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cm), cm); err != nil || cm.DeletionTimestamp == nil {
		t.Fatalf("before the stand-in: %v, deletionTimestamp %v; want a terminating ConfigMap", err, cm.DeletionTimestamp)
	}
	env.StandInForForegroundDeletion(t, &corev1.ConfigMap{})
	harness.WaitForDeletion(t, env.Client, cm, time.Minute)
}
