// Package procstat reads Linux's /proc/PID/stat (proc_pid_stat(5)) and a
// process's children: the one reader diagnose, contain and supervise
// share. Parse runs anywhere; Read and Children find nothing where there
// is no /proc.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Stat is what lockctl reads of a /proc/PID/stat line.
type Stat struct {
	// Comm is the command name: between the first "(" and the last ")",
	// as it may hold spaces and parentheses itself.
	Comm string
	// State is the state letter: R running, S sleeping, D disk wait,
	// T stopped, t stopped by a tracer, Z zombie, ...
	State byte
	PPID  int
	PGRP  int
	// StartTicks is field 22: the start time after boot, in clock ticks
	// (USER_HZ, 100 a second on Linux).
	StartTicks uint64
}

// Parse parses the text of a /proc/PID/stat or /proc/PID/task/TID/stat
// file; false when it is not in that form (a cut or foreign line).
func Parse(b []byte) (Stat, bool) {
	open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return Stat{}, false
	}
	f := strings.Fields(string(b[closing+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Stat{}, false
	}
	return Stat{Comm: string(b[open+1 : closing]), State: f[0][0], PPID: ppid, PGRP: pgrp, StartTicks: start}, true
}

// Read reads and parses /proc/PID/stat. The error wraps fs.ErrNotExist
// when there is no such process (it ended, or this is not Linux).
func Read(pid int) (Stat, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	st, ok := Parse(b)
	if !ok {
		return Stat{}, fmt.Errorf("%s does not parse", path)
	}
	return st, nil
}

// PIDs lists the processes in /proc, in its order; none where it cannot be
// read.
func PIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// Children lists pid's children from the children file of each of its
// threads (Linux 3.5+, CONFIG_PROC_CHILDREN); ok is false when the kernel
// has no such files, true with none when pid is gone.
func Children(pid int) (pids []int, ok bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	if _, err := os.Stat(dir + strconv.Itoa(pid) + "/children"); err != nil {
		_, gone := os.Stat(dir)
		return nil, gone != nil
	}
	tasks, _ := os.ReadDir(dir)
	for _, task := range tasks {
		b, _ := os.ReadFile(dir + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if child, err := strconv.Atoi(f); err == nil {
				pids = append(pids, child)
			}
		}
	}
	return pids, true
}
