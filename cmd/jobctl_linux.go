package cmd

import (
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// jobControl is lockctl run's part in a shell's job control.
//
// When lockctl runs in the foreground of a terminal (an interactive shell's
// job), the child's process group is made the terminal's foreground group:
// a background group that reads the terminal is stopped by SIGTTIN, and
// Ctrl-C, Ctrl-\ and Ctrl-Z must reach the child as they would without
// lockctl. When the child is stopped (Ctrl-Z, or a SIGTSTP sent to lockctl
// and forwarded), lockctl stops too, so the shell sees the job stopped and
// gets its terminal back; renewals stop with it. On SIGCONT the run
// supervisor continues the child only if the lease can still be proven
// (see superviseChild).
type jobControl struct {
	tty  int  // lockctl's terminal (its stdin) while lockctl is in its foreground; -1 otherwise
	tstp bool // a SIGTSTP was forwarded: lockctl stops once the child has
}

// newJobControl looks at in, the stdin the child will get.
func newJobControl(in io.Reader) *jobControl {
	j := &jobControl{tty: -1}
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return j
	}
	if pg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP); err == nil && pg == unix.Getpgrp() {
		j.tty = int(f.Fd())
	}
	return j
}

// procAttr is childProcAttr, with the child's group in the terminal's
// foreground when lockctl holds it.
func (j *jobControl) procAttr() *syscall.SysProcAttr {
	a := childProcAttr()
	if j.tty >= 0 {
		a.Foreground, a.Ctty = true, j.tty // Ctty: a descriptor of this process (syscall.SysProcAttr)
	}
	return a
}

// signals are the signals the job control needs relayed (to signal).
func (j *jobControl) signals() []os.Signal { return []os.Signal{syscall.SIGTSTP, syscall.SIGCHLD} }

// started is called once the child runs. lockctl is now a background
// process on its terminal: with SIGTTOU ignored it may still write its
// messages (under stty tostop) and take the terminal back. Ignored only
// now, since an ignored signal stays ignored across exec.
func (j *jobControl) started() {
	if j.tty >= 0 {
		signal.Ignore(syscall.SIGTTOU)
	}
}

// signal handles a job-control signal: ok is false for any other signal.
// stopped is true when lockctl stopped with the child and has just been
// continued (SIGCONT); the caller then decides whether the child may go on
// (resume) or must be killed.
func (j *jobControl) signal(s os.Signal, child *os.Process) (stopped, ok bool) {
	switch s {
	case syscall.SIGTSTP:
		j.tstp = true
		_ = signalGroup(child, syscall.SIGTSTP)
		return false, true
	case syscall.SIGCHLD:
		if !childStopped(child.Pid) || (j.tty < 0 && !j.tstp) {
			// Without a terminal nobody would continue a stopped lockctl:
			// it keeps supervising a child that someone else stopped.
			return false, true
		}
		j.tstp = false
		j.suspend(child)
		return true, true
	}
	return false, false
}

// suspend stops the child's whole group (not only the process that got the
// signal) and then lockctl: its whole job on a terminal, as Ctrl-Z would
// have without lockctl (the shell then takes the terminal back), only
// itself otherwise. It returns once lockctl is continued (SIGCONT): kill(2)
// may return to the calling thread before the stop takes hold.
func (j *jobControl) suspend(child *os.Process) {
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	_ = signalGroup(child, syscall.SIGSTOP)
	if j.tty < 0 {
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	} else {
		_ = syscall.Kill(0, syscall.SIGSTOP)
	}
	<-cont
}

// resume gives the terminal back to the child if lockctl was continued in
// the foreground (fg, not bg) and continues the child's group.
func (j *jobControl) resume(child *os.Process) {
	if j.tty >= 0 {
		if pg, err := unix.IoctlGetInt(j.tty, unix.TIOCGPGRP); err == nil && pg == unix.Getpgrp() {
			_ = unix.IoctlSetPointerInt(j.tty, unix.TIOCSPGRP, child.Pid)
		}
	}
	_ = signalGroup(child, syscall.SIGCONT)
}

// takeTerminal makes lockctl's group the terminal's foreground group again
// if the child's group has it (or it is gone), so that what runs after
// lockctl (the rest of a script) can read the terminal. A terminal the
// shell took back (after bg) is left alone.
func (j *jobControl) takeTerminal(child *os.Process) {
	if j.tty < 0 {
		return
	}
	if pg, err := unix.IoctlGetInt(j.tty, unix.TIOCGPGRP); err == nil && (pg == child.Pid || pg == 0) {
		_ = unix.IoctlSetPointerInt(j.tty, unix.TIOCSPGRP, unix.Getpgrp())
	}
}

// cldStopped is si_code CLD_STOPPED (<signal.h>; not in x/sys/unix).
const cldStopped = 5

// childStopped reports (and consumes) a stop of the child, without
// reaping an exit: exec.Cmd.Wait does that.
func childStopped(pid int) bool {
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOHANG, nil); err != nil {
		return false
	}
	return info.Signo == int32(syscall.SIGCHLD) && info.Code == cldStopped
}
