package apply

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/convergo-dev/convergo/reconcile/internal/applytest"
	"github.com/convergo-dev/convergo/reconcile/internal/seam"
)

// TestSeam checks that seam.Of reaches each Applier's own guard and record of writes.
func TestSeam(t *testing.T) {
	fenced := errors.New("fenced")
	tests := []struct {
		name string
		opts []Option
		want error
	}{
		{name: "no guard"},
		{name: "guard refuses", opts: []Option{WithWriteGuard(func() error { return fenced })}, want: fenced},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := applytest.NewFake(t, &applytest.WriteCounter{})
			w := seam.Of(NewApplier(c, c, tc.opts...))
			if err := w.MayWrite(); !errors.Is(err, tc.want) {
				t.Errorf("MayWrite() = %v, want %v", err, tc.want)
			}
			gk := schema.GroupKind{Kind: "ConfigMap"}
			cached := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "1"}}
			answer := cached.DeepCopy()
			answer.ResourceVersion = "2"
			answer.Data = map[string]string{"k": "v"}
			w.RememberWrite(gk, "1", answer)
			if diff := cmp.Diff(answer, w.Latest(gk, cached)); diff != "" {
				t.Errorf("Latest of a superseded version (-want +got):\n%s", diff)
			}
			other := seam.Of(NewApplier(c, c))
			if diff := cmp.Diff(cached, other.Latest(gk, cached).(*corev1.ConfigMap)); diff != "" {
				t.Errorf("another Applier's record holds the write (-want +got):\n%s", diff)
			}
		})
	}
}
