package cluster_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/convergo-dev/convergo/testing/cluster"
)

// Start reports missing binaries with the command that builds them; a caller can branch on the
// typed error, for example to skip with a hint instead of failing.
func ExampleStart_missingBinaries() {
	c, err := cluster.Start(context.Background(),
		cluster.WithBinaryDir("/nonexistent/convergo-assets"),
		cluster.WithNodes(3),
	)
	if err == nil {
		defer c.Stop()
	}
	var missing *cluster.MissingBinariesError
	if errors.As(err, &missing) {
		fmt.Println("directory:", missing.Dir)
		fmt.Println("missing:", missing.Missing)
	}
	// Output:
	// directory: /nonexistent/convergo-assets
	// missing: [etcd kube-apiserver kube-controller-manager kube-scheduler kwok kwok-stages.yaml]
}

// Without the scheduler the cluster needs one binary less.
func ExampleWithoutScheduler() {
	_, err := cluster.Start(context.Background(),
		cluster.WithBinaryDir("/nonexistent/convergo-assets"),
		cluster.WithoutScheduler(),
	)
	var missing *cluster.MissingBinariesError
	if errors.As(err, &missing) {
		fmt.Println(missing.Missing)
	}
	// Output:
	// [etcd kube-apiserver kube-controller-manager kwok kwok-stages.yaml]
}
