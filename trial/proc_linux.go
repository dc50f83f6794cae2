package trial

import "syscall"

// groupAttr starts a worker as the leader of its own process group and has
// the kernel SIGKILL it should lockctl die (prctl(2), PR_SET_PDEATHSIG): a
// worker must not outlive the trial that restarts it.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
