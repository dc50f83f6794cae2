//go:build unix

package cmd

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
)

// watchdog is the second lockctl process that run starts before the child:
// should this lockctl die (SIGKILL, the OOM killer, a crash), it SIGKILLs
// the child's process group. PR_SET_PDEATHSIG
// reaches the child alone, and what the child started (sh -c 'a; b' runs a
// and b as its children) would run on without the lock, past the lease.
// The watchdog runs in a process group of its own, away from the terminal's
// signals, and learns of lockctl's end from its stdin: a pipe whose other
// end only lockctl holds. On it lockctl writes the child's process group
// (a line with its number).
type watchdog struct {
	cmd *exec.Cmd
	w   *os.File
}

// startWatchdog starts the watchdog with start (jobControl.start: a stop
// signal sent to lockctl's group between the fork and the exec would hold
// it there, and exec.Cmd.Start with it). It runs this very binary
// (/proc/self/exe on Linux: the file may have been replaced since).
func startWatchdog(start func(*exec.Cmd) error) (*watchdog, error) {
	self := "/proc/self/exe"
	if runtime.GOOS != "linux" {
		var err error
		if self, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	r, w, err := os.Pipe() // close-on-exec: the child does not hold it
	if err != nil {
		return nil, err
	}
	defer r.Close()
	c := exec.Command(self, watchdogArg)
	c.Args[0] = os.Args[0]
	c.Stdin = r
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := start(c); err != nil {
		w.Close()
		return nil, err
	}
	return &watchdog{cmd: c, w: w}, nil
}

// watch tells the watchdog the child's process group; d may be nil (no
// watchdog), as for done.
func (d *watchdog) watch(pgid int) {
	if d != nil {
		_, _ = fmt.Fprintf(d.w, "%d\n", pgid)
	}
}

// done ends the watchdog once the child's group is gone: SIGKILL and wait,
// at once, where a "done" message had lockctl wait for the watchdog's own
// start-up (some 20ms) when the command was short. Left to exit after
// lockctl, it would stay a zombie under a parent that does not reap (a
// container's PID 1 that is not an init).
func (d *watchdog) done() {
	if d == nil {
		return
	}
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
	_ = d.w.Close()
}

// runWatchdog is the watchdog: it reads what lockctl writes on its stdin
// and, when that ends (lockctl is gone), SIGKILLs the last process group it
// was told. lockctl SIGKILLs it first when it ends normally. The signals a
// terminal or a job's kill send do not stop it.
func runWatchdog() int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	pgid := 0
	for in := bufio.NewScanner(os.Stdin); in.Scan(); {
		if n, err := strconv.Atoi(in.Text()); err == nil && n > 1 {
			pgid = n
		}
	}
	if pgid > 1 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return ExitOK
}
