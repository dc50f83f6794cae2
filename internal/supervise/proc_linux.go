package supervise

import (
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/lockctl/lockctl/internal/procstat"
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
	pids, ok := procstat.Children(parent)
	if !ok {
		pids = procstat.PIDs()
	}
	var groups []int
	for _, pid := range pids {
		if st, err := procstat.Read(pid); err == nil && pid != os.Getpid() && st.PPID == parent && st.PGRP == pid {
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
	pids, _ := procstat.Children(parent)
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

// isStopped reports whether pid is stopped (state T, or t: a tracer's
// stop), from /proc/PID/stat: false when it cannot be read.
func isStopped(pid int) bool {
	st, err := procstat.Read(pid)
	return err == nil && (st.State == 'T' || st.State == 't')
}
