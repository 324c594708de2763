//go:build !linux

package harness

// guardChildren has no watchdog outside Linux (it finds the control plane's processes in /proc): a
// test binary killed without Stop may leave its kube-apiserver and etcd running.
func guardChildren(string) (func() error, error) { return func() error { return nil }, nil }
