//go:build unix

package supervise

import (
	"os"
	"syscall"
)

// SignalGroup sends sig to p's whole process group (p leads it, started
// with GroupAttr), so the helpers it started get it too.
func SignalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}

// TerminateGroup sends SIGTERM to p's process group.
func TerminateGroup(p *os.Process) error { return SignalGroup(p, syscall.SIGTERM) }

// KillGroup sends SIGKILL to p's process group.
func KillGroup(p *os.Process) error { return SignalGroup(p, syscall.SIGKILL) }

// PauseGroup stops p's process group (SIGSTOP: it cannot be caught, so
// the group freezes as a whole) until ContinueGroup.
func PauseGroup(p *os.Process) error { return SignalGroup(p, syscall.SIGSTOP) }

// ContinueGroup continues p's process group (SIGCONT).
func ContinueGroup(p *os.Process) error { return SignalGroup(p, syscall.SIGCONT) }

// relay forwards a signal lockctl received to p's process group.
func relay(p *os.Process, sig os.Signal) error { return SignalGroup(p, sig.(syscall.Signal)) }
