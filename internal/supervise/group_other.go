//go:build !unix

package supervise

import (
	"errors"
	"os"
	"syscall"
)

// GroupAttr has nothing to add where there are no process groups.
func GroupAttr() *syscall.SysProcAttr { return nil }

// SignalGroup can only kill p where there are no POSIX signals: any sig
// ends it (os.Process.Kill).
func SignalGroup(p *os.Process, _ syscall.Signal) error { return p.Kill() }

// TerminateGroup kills p: there is no SIGTERM to ask it with.
func TerminateGroup(p *os.Process) error { return p.Kill() }

// KillGroup kills p.
func KillGroup(p *os.Process) error { return p.Kill() }

// PauseGroup returns errors.ErrUnsupported: there is no SIGSTOP.
func PauseGroup(*os.Process) error { return errors.ErrUnsupported }

// ContinueGroup has nothing to continue where nothing can be stopped.
func ContinueGroup(*os.Process) error { return nil }

// relay kills p, as a forwarded signal would end it.
func relay(p *os.Process, _ os.Signal) error { return p.Kill() }
