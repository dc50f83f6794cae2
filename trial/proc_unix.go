//go:build unix

package trial

import (
	"os"
	"syscall"
)

// Signals a trial sends to a worker's process group.
var (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
	sigKill = syscall.SIGKILL
	sigTerm = syscall.SIGTERM
)

// signalGroup sends sig to p's whole process group (p leads it: started
// with groupAttr), so the helpers a worker started pause and stop with it.
func signalGroup(p *os.Process, sig os.Signal) error {
	return syscall.Kill(-p.Pid, sig.(syscall.Signal))
}

// platformErr is nil: Unix has process groups.
func platformErr() error { return nil }
