//go:build !linux

package cluster

import (
	"errors"
	"time"
)

func processCPUTime(int) (time.Duration, error) {
	return 0, errors.New("process cpu time is only read on linux (/proc)")
}

func machineCPUTime() (time.Duration, error) {
	return 0, errors.New("machine cpu time is only read on linux (/proc/stat)")
}
