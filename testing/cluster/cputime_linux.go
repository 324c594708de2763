package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/convergo-dev/convergo/testing/internal/procstat"
)

// clockTicksPerSecond is USER_HZ, the unit of the times in /proc/<pid>/stat: 100 on every Linux
// architecture Go supports.
const clockTicksPerSecond = 100

// processCPUTime reads utime and stime of pid from /proc/<pid>/stat.
func processCPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU returns utime+stime of a /proc/<pid>/stat line: fields 14 and 15 (see procstat.Fields).
func parseStatCPU(stat string) (time.Duration, error) {
	fields, err := procstat.Fields(stat)
	if err != nil {
		return 0, err
	}
	if len(fields) < 13 {
		return 0, fmt.Errorf("parse /proc stat: %d fields after the command name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc stat: cpu time %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicksPerSecond, nil
}

// machineCPUTime reads the busy times of all cores from /proc/stat.
func machineCPUTime() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return parseMachineStat(b)
}

// parseMachineStat returns the busy time in the "cpu" line of /proc/stat (the sum over all cores):
// user, nice, system, irq, softirq and steal, in clock ticks. Idle and iowait are not busy; guest
// time is already counted in user.
func parseMachineStat(stat []byte) (time.Duration, error) {
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "cpu" {
			continue
		}
		if len(fields) < 9 {
			return 0, fmt.Errorf("parse /proc/stat: %d fields in the cpu line, want at least 9", len(fields))
		}
		var ticks int64
		for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system [idle iowait] irq softirq steal
			n, err := strconv.ParseInt(fields[i], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse /proc/stat: cpu time %q: %w", fields[i], err)
			}
			ticks += n
		}
		return time.Duration(ticks) * time.Second / clockTicksPerSecond, nil
	}
	return 0, fmt.Errorf("parse /proc/stat: no cpu line")
}
