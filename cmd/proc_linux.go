package cmd

import "syscall"

// childProcAttr starts the child as the leader of its own process group and,
// should lockctl itself die (SIGKILL, OOM killer), has the kernel SIGKILL it:
// a child must never run on without its renewer (prctl(2), PR_SET_PDEATHSIG).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
