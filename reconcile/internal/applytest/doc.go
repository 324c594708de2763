// Package applytest holds the fake API server the unit tests of packages apply and graph share: a
// controller-runtime fake client whose server-side applies honour the guards the Applier sends (as
// the real API server does), and that counts writes.
//
//	w := &applytest.WriteCounter{}
//	c := applytest.NewFake(t, w)
//	a := apply.NewApplier(c, c)
package applytest
