// Package seam gives packages graph and reconcile what they ask of an apply.Applier beyond its
// public methods: its record of writes (which the controller's own writes to the reconciled object
// share) and its write guard. Package apply sets each Applier's Writes; nothing outside reconcile/
// can reach them.
//
//	w := seam.Of(applier)
//	if err := w.MayWrite(); err != nil {
//		return err
//	}
package seam
