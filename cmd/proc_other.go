//go:build !unix

package cmd

import (
	"os"
	"syscall"
)

// childProcAttr has nothing to add where there are no process groups.
func childProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup can only kill the child where there are no POSIX signals.
func signalGroup(p *os.Process, _ syscall.Signal) error { return p.Kill() }

// continueGroup has nothing to continue where nothing is stopped.
func continueGroup(*os.Process) error { return nil }
