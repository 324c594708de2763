// Package procstat reads a process's line in /proc/<pid>/stat (Linux): the cluster reads its
// components' CPU time there, and the harness the parent of its control plane's processes.
//
//	fields, err := procstat.Read(pid)
//	// fields[0]: the state ("S", "Z"...), fields[1]: the parent's process ID,
//	// fields[11] and fields[12]: user and system time in clock ticks
//
// It is internal to the testing packages.
package procstat
