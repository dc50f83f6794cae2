//go:build !unix

package trial

import (
	"errors"
	"os"
	"syscall"
)

// A trial pauses process groups (SIGSTOP): only on Unix.
var (
	sigStop os.Signal = os.Kill
	sigCont os.Signal = os.Kill
	sigKill os.Signal = os.Kill
	sigTerm os.Signal = os.Kill
)

// errNoGroups: Windows has no process groups to stop and continue.
var errNoGroups = errors.New("lockctl trial needs a Unix system (process groups, SIGSTOP)")

func signalGroup(*os.Process, os.Signal) error { return errNoGroups }

func groupAttr() *syscall.SysProcAttr { return nil }

func platformErr() error { return errNoGroups }
