// Package supervise runs `lockctl run`'s child under a held lock: it starts
// the child in a process group of its own, beside a watchdog process, keeps
// the lease renewed (lockcore.Keep), relays signals and the shell's job
// control, and stops the group (SIGTERM, SIGKILL after the grace) before the
// lease could pass to another holder. It never prints: what the caller
// should say comes as Events. It also exports the process-group primitives
// (GroupAttr, SignalGroup, PauseGroup, ContinueGroup, KillGroup) for other
// commands that start and freeze process groups.
package supervise

import (
	"context"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/lockcore"
)

// WatchdogArg is the first argument of the watchdog process Run starts: the
// binary it runs (this very one) must call RunWatchdog with the second,
// lockctl's pid, before anything else.
const WatchdogArg = "__lockctl-watchdog"

// Options are the inputs of Run.
type Options struct {
	// Path is the executable to run (already found with exec.LookPath);
	// Args its argv, Args[0] the name the child sees.
	Path string
	Args []string
	// Env is the child's whole environment.
	Env []string
	// Stdin, Stdout and Stderr are passed to the child; a terminal on Stdin
	// (or lockctl's controlling one) brings in job control (Linux).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Lease          lockcore.Lease
	// Grace is the time between SIGTERM and SIGKILL.
	Grace time.Duration
	// Deadline is when the budget sends SIGTERM (wall clock).
	Deadline time.Time
	// ReleaseTimeout bounds the release of the lock (one Redis call).
	ReleaseTimeout time.Duration
	// Notify is told what happened, from Run's goroutine; nil: nobody.
	Notify func(Event)
	// AfterStart runs between the child's start and the watchdog's watch
	// line; nil but in tests that freeze lockctl there.
	AfterStart func()
}

// EventKind says which Event happened.
type EventKind int

const (
	// EventNoWatchdog: the watchdog could not be started (Err says why);
	// the child runs without it.
	EventNoWatchdog EventKind = iota + 1
	// EventStopping: the Keeper cancelled the work (Cause, LastRenewErr);
	// SIGTERM was sent, SIGKILL follows in KillIn.
	EventStopping
	// EventGraceKilled: the child outlived the grace; SIGKILL was sent.
	EventGraceKilled
	// EventStoppedTooLong: lockctl and the child were stopped (Ctrl-Z)
	// past the time the lease can be proven; the child was killed without
	// being continued.
	EventStoppedTooLong
	// EventWatchdogStopped: lockctl was stopped or starved past the time
	// the lease can be proven; its watchdog stopped the child.
	EventWatchdogStopped
)

// Event is something the caller may want to say, on stderr for run.
type Event struct {
	Kind EventKind
	// Err is why the watchdog could not start (EventNoWatchdog).
	Err error
	// Cause is the Keeper's cancel cause and LastRenewErr the last
	// renewal's error, nil if it succeeded (EventStopping).
	Cause, LastRenewErr error
	// KillIn is the time from SIGTERM to SIGKILL (EventStopping).
	KillIn time.Duration
	// Late: the cancel was handled past the lease's provable end, lockctl
	// starved or stopped, so no grace was left: KillIn is 0 though Grace
	// is not (EventStopping).
	Late bool
}

// Result is how the child ended.
type Result struct {
	State *os.ProcessState
	// Cause is why the child was stopped: nil when it exited on its own,
	// else lockcore.ErrBudgetExceeded, ErrBoundReached or ErrLeaseLost
	// (wrapped or not).
	Cause error
	// ReleaseErr is the release's error: nil (released),
	// lockcore.ErrNotHeld or a Redis error.
	ReleaseErr error
}

// StartError is Run's error when the child could not be started.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Run runs the child while lock is held and kept renewed, until the child's
// process group is gone, then releases the lock, with the signals still
// relayed. It returns ctx's error when ctx ended before the child started
// (a stop signal between the acquire and here) and a *StartError when the
// child could not start, the lock released in both cases.
func Run(ctx context.Context, lock *lockcore.Lock, o Options) (Result, error) {
	job := newJobControl(o.Stdin, o.Stdout)
	forward := NotIgnored(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	// SIGQUIT goes with SIGINT (cmd.Execute ignores it when SIGINT is).
	if !signal.Ignored(syscall.SIGINT) {
		forward = append(forward, syscall.SIGQUIT)
	}
	// Room for a burst: signal.Notify drops what does not fit (nothing
	// drains the channel while lockctl itself is stopped).
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs, append(forward, job.signals()...)...)
	defer signal.Stop(sigs)
	// SIGCHLD on a channel of its own: Ctrl-Z typed again and again while
	// lockctl's group had the terminal filled the shared one with SIGTSTP,
	// and the SIGCHLD of the child's stop that followed was dropped: the
	// child stayed stopped. One pending is enough: job.signal reads the
	// child's state when it handles it.
	chld := make(chan os.Signal, 1)
	if cs := job.childSignals(); len(cs) > 0 {
		signal.Notify(chld, cs...)
		defer signal.Stop(chld)
	}
	release := func() error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.ReleaseTimeout)
		defer cancel()
		return lock.Release(rctx)
	}
	if err := ctx.Err(); err != nil { // interrupted between the acquire and here
		_ = release()
		return Result{}, err
	}

	child := exec.Command(o.Path, o.Args[1:]...)
	child.Args[0] = o.Args[0]
	child.Stdin, child.Stdout, child.Stderr = o.Stdin, o.Stdout, o.Stderr
	child.Env = o.Env
	child.SysProcAttr = job.procAttr()
	child.WaitDelay = time.Second // stdio copies must not outlive the child for long
	s := &supervisor{o: o, lock: lock, child: child, job: job, acquired: lock.AcquiredAt}
	// The watchdog first: started after the child, it left a window (about
	// 9ms) in which a SIGKILL to lockctl left what the child started running.
	wd, err := startWatchdog(job.start, o.Grace, lock.ValidUntil().Add(-o.Grace))
	if err != nil {
		s.notify(Event{Kind: EventNoWatchdog, Err: err})
	}
	s.wd = wd
	// The deadline before the fork: a lockctl frozen between the fork and
	// the watch line leaves the watchdog one, and it finds the child.
	wd.renewed(lock.ValidUntil())
	if err := job.start(child); err != nil {
		wd.done()
		_ = release()
		return Result{}, &StartError{Err: err}
	}
	if o.AfterStart != nil {
		o.AfterStart()
	}
	wd.watch(child.Process.Pid)
	job.started()

	work, keeper := lockcore.Keep(context.WithoutCancel(ctx), lock, lockcore.KeeperOptions{
		Lease: o.Lease, StopAhead: o.Grace,
		OnRenew: func(err error) {
			s.lastRenewErr = err
			if err == nil { // the Keeper's goroutine: lock is its to read
				wd.renewed(lock.ValidUntil())
			}
		},
	})
	s.work, s.keeper, s.workDone = work, keeper, work.Done()
	cause := s.loop(sigs, chld)
	keeper.Stop()
	// Whatever is left in the child's process group would run without the
	// lock: stop it before releasing.
	_ = KillGroup(child.Process)
	wd.done()
	job.takeTerminal(child.Process)
	return Result{State: child.ProcessState, Cause: cause, ReleaseErr: release()}, nil
}

// ExitCode is the child's exit code, or 128+N when signal N ended it (the
// shell's convention).
func ExitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// NotIgnored returns the signals of sigs that lockctl did not start with
// ignored. An ignored one stays ignored, for lockctl and for a child that
// run starts, as it would without lockctl: Notify would undo that. nohup
// ignores SIGHUP; sh ignores SIGINT and SIGQUIT in a script's background
// jobs (POSIX, "Shell Command Language", 2.11 Signals and Error Handling).
// Go keeps only SIGHUP and SIGINT ignored if inherited so; for other
// signals its runtime has installed a handler before main, and they never
// show as ignored here.
func NotIgnored(sigs ...os.Signal) []os.Signal {
	var out []os.Signal
	for _, s := range sigs {
		if !signal.Ignored(s) {
			out = append(out, s)
		}
	}
	return out
}
