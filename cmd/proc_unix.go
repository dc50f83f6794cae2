//go:build unix

package cmd

import (
	"os"
	"syscall"
)

// signalGroup sends sig to the child's whole process group (the child was
// started as its group's leader), so helpers it started stop with it.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}

// continueGroup continues the child's whole process group (SIGCONT).
func continueGroup(p *os.Process) error { return signalGroup(p, syscall.SIGCONT) }
