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

// MachineCPUTime returns the CPU time every process of the machine has used since it booted: the
// busy times of /proc/stat (user, nice, system, irq, softirq and steal; not idle or I/O wait), summed
// over all cores. Take it before and after a stretch of work and divide the difference by the elapsed
// time: the result is the number of cores that were busy, which says whether the work was bound by
// the machine's CPU. It counts everything that ran, not only the cluster. It is available on Linux only.
func MachineCPUTime() (time.Duration, error) {
	d, err := machineCPUTime()
	if err != nil {
		return 0, fmt.Errorf("cpu time of the machine: %w", err)
	}
	return d, nil
}
