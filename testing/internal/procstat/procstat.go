package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Fields returns the fields of a /proc/<pid>/stat line that follow the command name. The command name
// (field 2) is in parentheses and may hold spaces and parentheses itself, so the fields are counted
// after the last closing parenthesis: Fields(stat)[0] is field 3 (the state), [1] field 4 (the
// parent's process ID), [11] and [12] fields 14 and 15 (utime and stime).
func Fields(stat string) ([]string, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, fmt.Errorf("parse /proc stat %q: no command name", stat)
	}
	return strings.Fields(stat[i+1:]), nil
}

// Read returns Fields of pid's /proc/<pid>/stat.
func Read(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	return Fields(string(b))
}
