package cluster

import (
	"fmt"
	"time"
)

// CPUTime returns the CPU time (user and system) the running process of comp has used since it
// started: a measure of how much work a test or benchmark caused, steadier than wall-clock time on a
// loaded machine. Take it before and after and subtract; a component restarted in between (for example
// by RestartAPIServer) starts again from zero. It is available on Linux only.
func (c *Cluster) CPUTime(comp Component) (time.Duration, error) {
	p, err := c.running(comp)
	if err != nil {
		return 0, fmt.Errorf("cpu time of %s: %w", comp, err)
	}
	d, err := processCPUTime(p.cmd.Process.Pid)
	if err != nil {
		return 0, fmt.Errorf("cpu time of %s: %w", comp, err)
	}
	return d, nil
}
