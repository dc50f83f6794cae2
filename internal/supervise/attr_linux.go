package supervise

import "syscall"

// GroupAttr starts a child as the leader of its own process group (for the
// *Group functions) and, should lockctl itself die (SIGKILL, OOM killer),
// has the kernel SIGKILL it: a child must never run on without its renewer
// (prctl(2), PR_SET_PDEATHSIG). Each call returns a new value to set as
// exec.Cmd.SysProcAttr.
func GroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
