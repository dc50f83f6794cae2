package supervise

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"unsafe"

	"github.com/lockctl/lockctl/internal/procstat"
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
// (see Run).
type jobControl struct {
	// tty is lockctl's controlling terminal (its stdin, else /dev/tty), in
	// the foreground or not; -1 without one. Started in the background
	// (lockctl run ... &), the child's reads and writes stop it there, and
	// lockctl's job must stop with it so that fg can hand it the terminal.
	tty  int
	fg   bool // lockctl's group had the terminal when the child was started
	tstp bool // a SIGTSTP was forwarded: lockctl stops once the child has
	// lazy: lockctl's job is a pipeline (see groupShared). The terminal
	// stays with the job, where a pager may read it, until the child uses
	// it (and is stopped by SIGTTIN or SIGTTOU).
	lazy bool
	// opened is the controlling terminal lockctl opened (its stdin is no
	// terminal), kept here so that it stays open.
	opened *os.File
}

// newJobControl looks at in, the stdin the child will get, and, when that
// is no terminal (lockctl run ... < file, producer | lockctl run ...), at
// lockctl's controlling terminal: a child may still read it (/dev/tty: a
// password prompt), and from a background group it was stopped by SIGTTIN
// for good, while lockctl renewed the lock for it. out, the child's
// stdout, tells a pipeline too (see pipeOut).
func newJobControl(in io.Reader, out io.Writer) *jobControl {
	j := &jobControl{tty: -1}
	f, ok := in.(*os.File)
	if !ok {
		return j
	}
	if !term.IsTerminal(int(f.Fd())) {
		// A background job of a shell without job control (sh -c 'lockctl
		// run ... &') starts with SIGINT ignored and stdin from /dev/null
		// (POSIX, 2.9.3 Asynchronous Lists, 2.11 Signals). Its group is
		// the shell's, the terminal's foreground one: through /dev/tty the
		// child took the terminal from the shell, which stopped on its
		// next read, and Ctrl-C no longer reached the shell.
		if signal.Ignored(syscall.SIGINT) {
			return j
		}
		if f, ok = controllingTerminal(); !ok {
			return j
		}
		j.opened = f
	}
	// TIOCGPGRP fails on a terminal that is not lockctl's controlling one.
	if pg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP); err == nil {
		j.tty, j.fg = int(f.Fd()), pg == unix.Getpgrp()
		j.lazy = groupShared() || pipeOut(out)
	}
	return j
}

// pipeOut reports whether out is a pipe: lockctl writes to a pipeline
// (lockctl run ... | less), whose reader the shell may fork only after
// lockctl looked at its group (groupShared). Given the terminal then, the
// child left that pager none: it read EOF, or was stopped by SIGTTIN.
func pipeOut(out io.Writer) bool {
	f, ok := out.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeNamedPipe != 0
}

// controllingTerminal opens lockctl's controlling terminal, if it has one.
func controllingTerminal() (*os.File, bool) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, false
	}
	if !term.IsTerminal(int(f.Fd())) {
		_ = f.Close()
		return nil, false
	}
	return f, true
}

// groupShared reports whether lockctl's process group holds a process that
// is neither lockctl nor one of its ancestors: lockctl is part of a
// pipeline (lockctl run ... | less), whose other commands may read the
// terminal too (a pager does).
func groupShared() bool {
	mine, _ := ancestorsInGroup()
	for _, pid := range groupPIDs() {
		if !mine[pid] {
			return true
		}
	}
	return false
}

// groupStopped reports whether a process of lockctl's group other than
// lockctl is stopped: a Ctrl-Z typed at lockctl's job reached the group.
func groupStopped() bool {
	for _, pid := range groupPIDs() {
		if st, err := procstat.Read(pid); err == nil && st.State == 'T' {
			return true
		}
	}
	return false
}

// groupPIDs returns the processes of lockctl's process group, lockctl
// excluded (from /proc; none if it cannot be read).
func groupPIDs() []int {
	pgrp, self := unix.Getpgrp(), os.Getpid()
	var out []int
	for _, pid := range procstat.PIDs() {
		if pid == self {
			continue
		}
		if pg, err := unix.Getpgid(pid); err == nil && pg == pgrp {
			out = append(out, pid)
		}
	}
	return out
}

// procAttr is GroupAttr, with the child's group in the terminal's
// foreground when lockctl holds it.
func (j *jobControl) procAttr() *syscall.SysProcAttr {
	a := GroupAttr()
	if j.fg && !j.lazy {
		a.Foreground, a.Ctty = true, j.tty // Ctty: a descriptor of this process (syscall.SysProcAttr)
	}
	return a
}

// signals are the signals the job control needs relayed (to signal).
func (j *jobControl) signals() []os.Signal {
	return []os.Signal{syscall.SIGTSTP, syscall.SIGCONT, syscall.SIGTTIN}
}

// childSignals are the signals that report a change in the child's state
// (to signal as well): relayed on a channel of their own (Run).
func (j *jobControl) childSignals() []os.Signal {
	return []os.Signal{syscall.SIGCHLD}
}

// started is called once the child runs. lockctl is now a background
// process on its terminal: with SIGTTOU ignored it may still write its
// messages (under stty tostop) and take the terminal back. Started in the
// background (lockctl run ... &), its first message (budget reached,
// SIGTERM sent) stopped it under stty tostop, the SIGKILL with it, and
// the child ran on without the lock. Ignored only now, since an ignored
// signal stays ignored across exec.
func (j *jobControl) started() {
	signal.Ignore(syscall.SIGTTOU)
}

// signal handles a job-control signal: ok is false for any other signal.
// stopped is true when lockctl stopped with the child and has just been
// continued (SIGCONT); the caller then decides whether the child may go on
// (resume) or must be killed.
func (j *jobControl) signal(s os.Signal, child *os.Process) (stopped, ok bool) {
	switch s {
	case syscall.SIGTSTP:
		if j.tty >= 0 && orphanedGroup() {
			// Typed while lockctl's group had the terminal (the child not
			// started yet, or a pipeline) where no shell can continue
			// lockctl (it leads its session): the kernel discards Ctrl-Z
			// there, and so does lockctl. Forwarded, it stopped the child
			// and then lockctl, for good.
			return false, true
		}
		_ = SignalGroup(child, syscall.SIGTSTP)
		if j.lazy && (j.foreground() || groupStopped()) {
			// A Ctrl-Z typed at the pipeline: the terminal stopped the rest
			// of lockctl's job at once, and the shell may already say so
			// and send fg. Waiting for the child's stop before stopping
			// too, lockctl stopped the job again after that fg. The shell
			// may have the terminal back already (its job is a script
			// whose pipeline this is: the script's sh stopped), so a
			// stopped member of the group counts too. Waiting could last:
			// a child that was forking when the SIGTSTP came (sh's vfork)
			// does not stop while its stopped new process holds it.
			j.suspend(child, true)
			return true, true
		}
		j.tstp = true
		return false, true
	case syscall.SIGTTIN:
		// Another process of lockctl's group (a pager after lockctl in a
		// pipeline) read the terminal while the child's group has it: the
		// kernel signals the whole group. Stopped, lockctl would stop
		// renewing while the child runs on.
		return false, true
	case syscall.SIGCONT:
		// Continued while running: after bg, fg continues lockctl's group
		// and hands the terminal to it, not to the child's.
		if !j.lazy {
			j.giveTerminal(child)
		}
		return false, true
	case syscall.SIGCHLD:
		sig, ok := childStopped(child.Pid)
		if !ok {
			return false, true
		}
		if (sig == syscall.SIGTTIN || sig == syscall.SIGTTOU) && j.foreground() {
			// The child used the terminal from the background while
			// lockctl's group has it: fg after bg (bash sends no SIGCONT to
			// a running job), or the child gave the terminal away.
			j.giveTerminal(child)
			_ = ContinueGroup(child)
			return false, true
		}
		job := j.tty >= 0 && !orphanedGroup()
		if !job && !j.tstp {
			if j.tty >= 0 && sig == syscall.SIGTSTP {
				// No shell can continue lockctl's group (lockctl leads the
				// session, as under ssh -t, docker run -t or script -c): the
				// kernel discards Ctrl-Z there, and so does lockctl.
				_ = ContinueGroup(child)
			}
			// Without a terminal nobody would continue a stopped lockctl:
			// it keeps supervising a child that someone else stopped.
			return false, true
		}
		j.tstp = false
		j.suspend(child, job)
		return true, true
	}
	return false, false
}

// start starts the child. A stop signal that reaches it before its exec
// stops it there (Go resets the signal handlers and unblocks signals before
// the exec), and exec.Cmd.Start would wait for that exec for good, handling
// no signal and renewing nothing, while the terminal, if handed over
// already, stays with the stopped child: a Ctrl-Z typed between the
// terminal's handover and the exec, or one sent to lockctl's group between
// the fork and the child's setpgid. Such a child is continued. lockctl got
// a Ctrl-Z of the second kind too and forwards it once the child runs. A
// child stopped after its exec, before Start returned, is left stopped for
// the supervisor, which gets the SIGCHLD too.
func (j *jobControl) start(c *exec.Cmd) error {
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(chld)
	started := make(chan error, 1)
	go func() { started <- c.Start() }()
	for {
		select {
		case err := <-started:
			if err != nil {
				j.startFailed()
			}
			return err
		case <-chld:
			continueStopped()
		}
	}
}

// startFailed takes the terminal back from a child that got it and failed
// to exec (exec format error): its group is gone, and what runs after
// lockctl (the rest of a script) was stopped by SIGTTIN when it read the
// terminal.
func (j *jobControl) startFailed() {
	if !j.fg || j.lazy {
		return
	}
	pg, err := unix.IoctlGetInt(j.tty, unix.TIOCGPGRP)
	if err != nil || pg == unix.Getpgrp() || syscall.Kill(-pg, 0) != syscall.ESRCH {
		return
	}
	signal.Ignore(syscall.SIGTTOU) // a background process taking the terminal; no child inherits it now
	_ = unix.IoctlSetPointerInt(j.tty, unix.TIOCSPGRP, unix.Getpgrp())
}

// continueStopped continues a stopped child of lockctl (the one being
// started, or the watchdog, which runs self too and is never stopped on
// purpose) that still runs self (lockctl's executable): one stopped
// before its exec. It consumes that stop; a stop after the exec is a real
// one (a Ctrl-Z) and is left alone. Exits are never consumed.
func continueStopped() {
	for {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil || info.Code != cldStopped {
			return
		}
		pid := int(siginfoPID(&info))
		if !runsSelf(pid) {
			return
		}
		_ = unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOHANG, nil)
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
}

// suspend stops the child's whole group (not only the process that got the
// signal) and then lockctl: its whole job when a shell's job control can
// continue it, as Ctrl-Z would have without lockctl (the shell then takes
// the terminal back), only itself otherwise. It returns once lockctl is
// continued (SIGCONT): kill(2) may return to the calling thread before the
// stop takes hold.
func (j *jobControl) suspend(child *os.Process, job bool) {
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	_ = PauseGroup(child)
	if !job {
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	} else {
		_ = syscall.Kill(0, syscall.SIGSTOP)
	}
	<-cont
}

// resume gives the terminal back to the child if lockctl was continued in
// the foreground (fg, not bg) and continues the child's group. In a
// pipeline (lazy) the terminal stays with the job, where a pager may read
// it: the child gets it again when it uses it.
func (j *jobControl) resume(child *os.Process) {
	if !j.lazy {
		j.giveTerminal(child)
	}
	_ = ContinueGroup(child)
}

// giveTerminal makes the child's group the terminal's foreground group if
// lockctl's group has it.
func (j *jobControl) giveTerminal(child *os.Process) {
	if j.foreground() {
		_ = unix.IoctlSetPointerInt(j.tty, unix.TIOCSPGRP, child.Pid)
	}
}

// foreground reports whether lockctl's group is the terminal's foreground
// group.
func (j *jobControl) foreground() bool {
	if j.tty < 0 {
		return false
	}
	pg, err := unix.IoctlGetInt(j.tty, unix.TIOCGPGRP)
	return err == nil && pg == unix.Getpgrp()
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

// childStopped reports (and consumes) a stop of the child and the signal
// that stopped it, without reaping an exit: exec.Cmd.Wait does that.
func childStopped(pid int) (syscall.Signal, bool) {
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOHANG, nil); err != nil {
		return 0, false
	}
	if info.Signo != int32(syscall.SIGCHLD) || info.Code != cldStopped {
		return 0, false
	}
	return syscall.Signal(siginfoStatus(&info)), true
}

// siginfoPID is si_pid (see siginfoStatus).
func siginfoPID(info *unix.Siginfo) int32 {
	const ptr = unsafe.Sizeof(uintptr(0))
	off := (12 + ptr - 1) &^ (ptr - 1)
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), off))
}

// siginfoStatus is si_status: for CLD_STOPPED, the signal that stopped the
// child. The union after si_signo, si_errno and si_code (int32 each) is
// aligned to a pointer; for SIGCHLD it starts with si_pid and si_uid
// (int32 each), then si_status.
func siginfoStatus(info *unix.Siginfo) int32 {
	const ptr = unsafe.Sizeof(uintptr(0))
	off := (12+ptr-1)&^(ptr-1) + 8
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), off))
}

// orphanedGroup reports whether lockctl's process group is orphaned: no
// member has its parent in another group of the same session, so no shell
// job control can continue it once stopped (lockctl leads its session, or
// runs in a shell without job control that does). The kernel does not stop
// such a group on Ctrl-Z. Only lockctl's ancestors are looked at: the
// first one outside the group decides. PID 1 counts: in a container it may
// be the shell (docker run -it image sh); the host's init is never in a
// terminal job's session.
func orphanedGroup() bool {
	self, err := unix.Getsid(0)
	if err != nil {
		return false
	}
	_, outside := ancestorsInGroup()
	if outside == 0 {
		return true
	}
	s, err := unix.Getsid(outside)
	return err != nil || s != self
}

// ancestorsInGroup walks up from lockctl while its ancestors are in its
// process group. It returns those, lockctl included, and the first
// ancestor outside the group: 0 when the walk ends before one (no parent
// left, or one gone or unreadable).
func ancestorsInGroup() (in map[int]bool, outside int) {
	pgrp := unix.Getpgrp()
	in = map[int]bool{os.Getpid(): true}
	for pid := os.Getppid(); pid > 0; {
		pg, err := unix.Getpgid(pid)
		if err != nil {
			return in, 0
		}
		if pg != pgrp {
			return in, pid
		}
		in[pid] = true
		if pid, err = parentOf(pid); err != nil {
			return in, 0
		}
	}
	return in, 0
}

// parentOf reads pid's parent from /proc/PID/stat.
func parentOf(pid int) (int, error) {
	st, err := procstat.Read(pid)
	return st.PPID, err
}
