package lockcore

import (
	"fmt"
	"time"
)

// NoGraceError is returned by Lease.ClampGrace when the lease leaves no room
// for a grace: it is not longer than its cancel margin, so it can never be
// proven held, or (RenewTooLate) renewals every RenewEvery come only once
// the lease less that margin is over (RENEW_AFTER_END).
type NoGraceError struct {
	Lease Lease
}

// RenewTooLate says the renewal interval, not the lease itself, leaves no room.
func (e *NoGraceError) RenewTooLate() bool { return !RenewsAfterEnd(e.Lease.Lease, 0) }

func (e *NoGraceError) Error() string {
	l := e.Lease
	if e.RenewTooLate() {
		return fmt.Sprintf("renew-every %s is not shorter than the lease %s minus its cancel margin %s: the lease would end before it is renewed",
			FormatDuration(l.RenewEvery), FormatDuration(l.Lease), FormatDuration(l.CancelMargin))
	}
	return fmt.Sprintf("lease %s is not longer than its cancel margin %s (lease/100 + 2ms): it can never be proven held",
		FormatDuration(l.Lease), FormatDuration(l.CancelMargin))
}

// ClampGrace returns the longest grace (the wind-down between asking the
// work to stop and killing it, lockctl run's SIGTERM → SIGKILL) the lease
// leaves room for, at most grace, in whole ms. When renewals fail the work
// is asked to stop at ValidUntil − grace, so the grace must end after the
// first renewal could have been tried. The rule (docs/run.md, "Stopping the child"):
// grace ≤ (lease − cancel margin − renew-every) / 2, half the slack after
// the first renewal, the other half for its retries; a fixed lease counts
// renew-every as 0. It returns a *NoGraceError when there is no slack.
func (l Lease) ClampGrace(grace time.Duration) (time.Duration, error) {
	if RenewsAfterEnd(l.Lease, 0) || RenewsAfterEnd(l.Lease, l.RenewEvery) {
		return 0, &NoGraceError{Lease: l}
	}
	slack := l.Lease - l.CancelMargin - l.RenewEvery
	return min(grace, (slack / 2).Truncate(time.Millisecond)), nil
}

// BudgetStop returns how long after the acquire the budget asks the work to
// stop: the budget for a renewed lease; for a fixed lease that ends with the
// budget, the lease less its cancel margin and grace, so work killed at the
// grace's end is gone before the lease could pass to another holder.
func (l Lease) BudgetStop(grace time.Duration) time.Duration {
	if !l.Renewable && l.Budget <= l.Lease {
		return l.Lease - l.CancelMargin - grace
	}
	return l.Budget
}
