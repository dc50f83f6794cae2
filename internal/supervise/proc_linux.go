package supervise

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// What the watchdog and the job control read in /proc (proc(5)).

// findChildGroups returns the pids of parent's children that lead their
// own process group, the watchdog aside: run's child (Setpgid), which
// lockctl may not have named yet. It reads parent's children from
// /proc/PID/task/TID/children and their /proc/PID/stat (proc(5): "pid
// (comm) state ppid pgrp ..."); on a kernel without the children files
// (CONFIG_PROC_CHILDREN) every /proc/PID/stat.
func findChildGroups(parent int) []int {
	if parent <= 1 {
		return nil
	}
	pids, ok := childrenOf(parent)
	if !ok {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if pid, err := strconv.Atoi(e.Name()); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	var groups []int
	for _, pid := range pids {
		if f, err := statFields(pid); err == nil && pid != os.Getpid() && len(f) >= 3 && f[1] == strconv.Itoa(parent) && f[2] == strconv.Itoa(pid) {
			groups = append(groups, pid)
		}
	}
	return groups
}

// continueBeforeExec SIGCONTs each stopped child of parent (the watchdog
// aside) that still runs this binary: run's child, stopped (Ctrl-Z) between
// its fork and its exec. lockctl's own job control continues it too, but
// cannot while its runtime waits, for a garbage collection, for the thread
// that vfork holds until that exec: then only another process can.
func continueBeforeExec(parent int) {
	pids, _ := childrenOf(parent)
	for _, pid := range pids {
		if pid != os.Getpid() && isStopped(pid) && runsSelf(pid) {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
}

// selfExe is the file this process runs (/proc/self/exe), read once: ""
// when it cannot be read.
var selfExe = sync.OnceValue(func() string { exe, _ := os.Readlink("/proc/self/exe"); return exe })

// runsSelf reports whether pid runs the file this process runs: a child
// not past its exec yet (or one that execs this binary again).
func runsSelf(pid int) bool {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	return err == nil && exe != "" && exe == selfExe()
}

// childrenOf lists parent's children from the children file of each of its
// threads; ok is false when the kernel has no such files (parent gone: ok,
// none).
func childrenOf(parent int) (pids []int, ok bool) {
	dir := "/proc/" + strconv.Itoa(parent) + "/task/"
	if _, err := os.Stat(dir + strconv.Itoa(parent) + "/children"); err != nil {
		_, gone := os.Stat(dir)
		return nil, gone != nil
	}
	tasks, _ := os.ReadDir(dir)
	for _, task := range tasks {
		b, _ := os.ReadFile(dir + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids, true
}

// isStopped reports whether pid is stopped (state T, or t: a tracer's
// stop), from /proc/PID/stat: false when it cannot be read.
func isStopped(pid int) bool {
	f, err := statFields(pid)
	return err == nil && (f[0] == "T" || f[0] == "t")
}

// statFields returns the fields of /proc/PID/stat after the command name:
// state, ppid, pgrp, ... (proc(5)); at least two.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 2 {
		return nil, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return f, nil
}
