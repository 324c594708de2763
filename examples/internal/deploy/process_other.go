//go:build !unix

package deploy

import (
	"context"
	"errors"
	"time"
)

var errNoLocalOperator = errors.New("running the operator as a local process needs a Unix system: run it yourself with the kubeconfig Deploy wrote")

func (op *Operator) startLocal(ctx context.Context, binary, kubeconfig, runDir string, timeout time.Duration) (*localOperator, error) {
	return nil, errNoLocalOperator
}

func runningLocal(runDir, binary string) *localOperator { return nil }

func (lo *localOperator) stop() error { return errNoLocalOperator }
