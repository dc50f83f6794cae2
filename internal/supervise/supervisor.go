package supervise

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"time"

	"github.com/lockctl/lockctl/lockcore"
)

// supervisor is Run's event loop: one method per event (a relayed signal,
// the Keeper's cancel, the SIGKILL timer, the child's exit).
type supervisor struct {
	o      Options
	lock   *lockcore.Lock
	child  *exec.Cmd
	job    *jobControl
	wd     *watchdog
	keeper *lockcore.Keeper
	work   context.Context
	// workDone is work.Done() until the child is being stopped, then nil.
	workDone <-chan struct{}
	// acquired is the first acquire's time.
	acquired time.Time
	// lastRenewErr is written by the Keeper; read after Stop.
	lastRenewErr error
	// cause is why the child was stopped (nil: it exited on its own).
	cause error
	// kill fires at killAt, the SIGKILL time, once SIGTERM was sent.
	kill      <-chan time.Time
	killTimer *time.Timer
	killAt    time.Time
}

// notify passes e to Options.Notify, if set.
func (s *supervisor) notify(e Event) {
	if s.o.Notify != nil {
		s.o.Notify(e)
	}
}

// loop handles events until the child exits and returns why it was
// stopped (nil: it exited on its own).
func (s *supervisor) loop(sigs, chld <-chan os.Signal) error {
	exited := make(chan error, 1)
	go func() { exited <- s.child.Wait() }()
	defer func() {
		if s.killTimer != nil {
			s.killTimer.Stop()
		}
	}()
	for {
		select {
		case sig := <-sigs:
			s.onSignal(sig)
		case sig := <-chld:
			s.onSignal(sig)
		case <-s.workDone:
			s.onWorkDone()
		case <-s.kill:
			s.onKill()
		case <-exited:
			s.onExited()
			return s.cause
		}
	}
}

// budgetEnded says whether the budget or the renewal bound has ended, as
// the Keeper measures them (from the first acquire; it moves
// lock.AcquiredAt on each renewal). After a stop past both the lease and
// the budget, the Keeper's timers fire at once and it picks one at
// random: the budget wins, so the exit is 124 every time.
func (s *supervisor) budgetEnded() error {
	now := time.Now()
	l := s.o.Lease
	switch {
	case !now.Before(s.o.Deadline):
		return lockcore.ErrBudgetExceeded
	case l.Renewable && l.RenewBound > 0 && !now.Before(s.acquired.Add(l.RenewBound)):
		return lockcore.ErrBoundReached
	}
	return nil
}

// provable says whether the child may go on: the lease can be proven
// with the grace to spare, and the watchdog has not started stopping it.
func (s *supervisor) provable() bool {
	return time.Now().Before(s.keeper.ValidUntil().Add(-s.o.Grace)) && !s.wd.mayHaveStopped()
}

// onSignal handles a signal relayed on sigs or chld.
func (s *supervisor) onSignal(sig os.Signal) {
	p := s.child.Process
	stopped, handled := s.job.signal(sig, p)
	if !handled {
		_ = relay(p, sig)
		// A stopped child would hold the signal pending: continue it,
		// as a shell's kill does for a stopped job, while the lease
		// can still be proven.
		if s.provable() {
			_ = ContinueGroup(p)
		}
	}
	if !stopped {
		return
	}
	// lockctl and the child were stopped (Ctrl-Z) and lockctl is
	// continued: renewals stopped meanwhile, so the child goes on
	// only if the lease can still be proven with the grace to spare.
	if s.provable() {
		s.job.resume(p)
		return
	}
	if s.workDone == nil {
		return // already stopping it: it stays stopped until the SIGKILL
	}
	if s.budgetEnded() != nil {
		return // the budget or bound ended meanwhile: its own path, exit 124
	}
	s.workDone = nil
	s.keeper.Stop()
	s.cause = lockcore.ErrLeaseLost
	_ = KillGroup(p)
	s.notify(Event{Kind: EventStoppedTooLong})
}

// onWorkDone handles the Keeper's cancel: SIGTERM now, SIGKILL after the
// grace and never after the lease stops being provable.
func (s *supervisor) onWorkDone() {
	s.workDone = nil
	s.keeper.Stop()
	s.cause = context.Cause(s.work)
	if b := s.budgetEnded(); b != nil && errors.Is(s.cause, lockcore.ErrLeaseLost) {
		s.cause = b
	}
	p := s.child.Process
	_ = TerminateGroup(p)
	// One reading of the clock: the grace shown is the grace given.
	now := time.Now()
	s.killAt = now.Add(s.o.Grace)
	if v := s.lock.ValidUntil(); v.Before(s.killAt) {
		s.killAt = v
	}
	// A stopped child would hold SIGTERM pending until the SIGKILL:
	// continue it (as systemd and a shell's kill do), to run until
	// killAt at most, inside the lease.
	if now.Before(s.killAt) {
		_ = ContinueGroup(p)
	}
	s.wd.stop(s.killAt)
	wait := max(s.killAt.Sub(now), 0)
	s.killTimer = time.NewTimer(wait)
	s.kill = s.killTimer.C
	s.notify(Event{Kind: EventStopping, Cause: s.cause, LastRenewErr: s.lastRenewErr, KillIn: wait.Round(time.Millisecond),
		Late: wait == 0 && s.o.Grace > 0})
}

// onKill handles the grace's end: SIGKILL to the group.
func (s *supervisor) onKill() {
	s.kill = nil
	_ = KillGroup(s.child.Process)
	s.notify(Event{Kind: EventGraceKilled})
}

// onExited handles the child's exit: one seen after the watchdog may have
// stopped the child is a lost lease, not the child's own exit.
func (s *supervisor) onExited() {
	if s.kill != nil && !time.Now().Before(s.killAt) {
		// The watchdog's SIGKILL, due at the same instant, came first.
		s.notify(Event{Kind: EventGraceKilled})
	}
	if s.cause == nil && s.wd.mayHaveStopped() {
		// lockctl was stopped or starved past the lease: the watchdog
		// stopped the command; nothing was held meanwhile.
		if s.cause = s.budgetEnded(); s.cause == nil {
			s.cause = lockcore.ErrLeaseLost
		}
		s.notify(Event{Kind: EventWatchdogStopped})
	}
}
