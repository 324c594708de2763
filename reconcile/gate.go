package reconcile

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// finalizerGate lets the children the garbage collector cannot remove wait until the owner's finalizer
// is in place, while the others are applied at the same time as it is added.
type finalizerGate struct {
	done chan struct{}
	err  error
}

func newFinalizerGate() *finalizerGate { return &finalizerGate{done: make(chan struct{})} }

// open records the outcome of adding the finalizer and releases the waiters. Call it once.
func (g *finalizerGate) open(err error) {
	g.err = err
	close(g.done)
}

// wait blocks until open was called and returns its error. It does not give up with ctx: the
// finalizer request itself does.
func (g *finalizerGate) wait() error {
	<-g.done
	return g.err
}

type gateKey struct{}

// withFinalizerGate returns ctx carrying g for the Applier.
func withFinalizerGate(ctx context.Context, g *finalizerGate) context.Context {
	return context.WithValue(ctx, gateKey{}, g)
}

// awaitFinalizer makes a child that the garbage collector cannot remove with its owner (it has no
// controller reference: cluster-scoped, or in another namespace) wait until the owner's finalizer is
// in place, when ctx carries a gate. A child with a controller reference goes ahead: should the owner
// be deleted before its finalizer lands, the garbage collector removes that child.
func awaitFinalizer(ctx context.Context, owner, child client.Object) error {
	g, _ := ctx.Value(gateKey{}).(*finalizerGate)
	if g == nil || owner == nil || metav1.GetControllerOf(child) != nil {
		return nil
	}
	if err := g.wait(); err != nil {
		return fmt.Errorf("waiting for the owner's finalizer: %w", err)
	}
	return nil
}
