//go:build unix

package cmd

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
)

// watchdogDone is what run writes to the watchdog once the child's process
// group is gone.
const watchdogDone = "done\n"

// startWatchdog starts a second lockctl that SIGKILLs the child's process
// group (pgid) should this lockctl die without saying it is done: SIGKILL,
// the OOM killer, a crash. PR_SET_PDEATHSIG reaches the child alone, and
// what it started (sh -c 'a; b' runs a and b as its children) would run on
// without the lock, past the lease. The watchdog runs in a process group of
// its own, away from the terminal's signals, and learns of lockctl's end
// from its stdin, a pipe whose other end only lockctl holds. done tells it
// the group is gone; it returns the error when the watchdog cannot start.
func startWatchdog(pgid int) (done func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe() // close-on-exec: the child does not hold it
	if err != nil {
		return nil, err
	}
	defer r.Close()
	wd := exec.Command(self, watchdogArg, strconv.Itoa(pgid))
	wd.Stdin = r
	wd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := wd.Start(); err != nil {
		w.Close()
		return nil, err
	}
	go func() { _ = wd.Wait() }()
	return func() {
		_, _ = io.WriteString(w, watchdogDone)
		_ = w.Close()
	}, nil
}

// runWatchdog is the watchdog: it waits for the end of its stdin and, unless
// lockctl wrote watchdogDone first, SIGKILLs process group pgidArg. The
// signals a terminal or a job's kill send do not stop it; it exits 2 for a
// bad argument.
func runWatchdog(pgidArg string) int {
	pgid, err := strconv.Atoi(pgidArg)
	if err != nil || pgid <= 1 {
		return ExitUsage
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	said, _ := io.ReadAll(os.Stdin)
	if string(said) != watchdogDone {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return ExitOK
}
