// Package lockcore is the lock model of lockctl: the budget→lease policy, key
// templates, owner and fencing tokens, the Lua scripts, a Redis lock client
// (Locker) and an auto-renewing keeper (Keeper).
//
// It never prints, reads flags or exits: callers pass options and get values
// and typed errors back.
package lockcore

import (
	"fmt"
	"time"
)

// Mode is how a call holds its lock: a fixed lease (ordinary) or a renewed
// one (trusted background task).
type Mode string

const (
	// ModeOrdinary is an ordinary HTTP or script call: lease = budget, never renewed.
	ModeOrdinary Mode = "ordinary"
	// ModeTrusted is a trusted durable background task: lease = min(budget, cap),
	// renewed while the holder is alive, up to the renewal bound.
	ModeTrusted Mode = "trusted"
)

// ParseMode accepts "trusted" or "ordinary"; anything else is an error naming the value.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeOrdinary, ModeTrusted:
		return Mode(s), nil
	}
	return "", fmt.Errorf("mode %q is not one of trusted, ordinary", s)
}

// Policy defaults of the reference platform; teams override them in config.
const (
	DefaultLeaseCap   = 60 * time.Second
	DefaultRenewBound = 12 * time.Hour
	// CheckpointAfter is the budget past which a task should checkpoint stable
	// units of work instead of only raising its timeout.
	CheckpointAfter = 10 * time.Minute
)

// Policy is the budget→lease policy of long-running tasks (see DESIGN.md,
// "Lease policy"). The zero value is not useful: start from DefaultPolicy.
type Policy struct {
	// LeaseCap is the longest single lease (one TTL) a renewable lease gets.
	LeaseCap time.Duration
	// RenewBound is the least total time renewals may extend a trusted lock;
	// the effective bound is max(budget, RenewBound).
	RenewBound time.Duration
	// RenewEvery is the renewal interval; zero means lease/3.
	RenewEvery time.Duration
}

// DefaultPolicy returns the reference platform's policy: cap 60 s, bound 12 h,
// renew every lease/3.
func DefaultPolicy() Policy {
	return Policy{LeaseCap: DefaultLeaseCap, RenewBound: DefaultRenewBound}
}

// Validate reports a policy whose cap or bound is not positive or whose
// renewal interval is negative.
func (p Policy) Validate() error {
	if p.LeaseCap <= 0 {
		return fmt.Errorf("lease cap %s must be positive", p.LeaseCap)
	}
	if p.RenewBound <= 0 {
		return fmt.Errorf("renew bound %s must be positive", p.RenewBound)
	}
	if p.RenewEvery < 0 {
		return fmt.Errorf("renew-every %s must be positive", p.RenewEvery)
	}
	return nil
}

// Warning codes attached to a Lease.
const (
	WarnCheckpoint     = "CHECKPOINT"      // budget over 10 minutes
	WarnCrashBlocks    = "CRASH_BLOCKS"    // ordinary budget over the cap: a crash blocks the key for the whole budget
	WarnSubsecond      = "SUBSECOND_LEASE" // lease under 1 s: likely a ms/s mix-up
	WarnRenewTooSlow   = "RENEW_TOO_SLOW"  // renew-every ≥ lease/2: one missed renewal loses the lock
	WarnRenewNotNeeded = "RENEW_AFTER_END" // renew-every ≥ lease: the lease ends before the first renewal
)

// Warning is one consequence of a lease worth telling the user about.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Lease is the lease a budget gets under a Policy, with what follows from it.
// Durations are time.Duration; their JSON names end in _ms where rendered.
type Lease struct {
	Budget time.Duration
	Mode   Mode
	// Lease is one TTL, as sent with SET PX.
	Lease time.Duration
	// Renewable is true for trusted tasks: the lease is renewed while the holder lives.
	Renewable bool
	// RenewEvery is the renewal interval (zero when not renewable).
	RenewEvery time.Duration
	// RenewBound is how long renewals may keep the lock in total (zero when not renewable).
	RenewBound time.Duration
	// Renewals is how many renewals it takes to run the whole budget.
	Renewals int64
	// TakeoverWait is the worst-case wait for the next holder after this holder
	// crashes: one full lease.
	TakeoverWait time.Duration
	// CancelMargin is how long before the lease's end the holder must stop:
	// lease × 0.01 + 2 ms, the clock-drift allowance Redlock clients use
	// (Redis docs, "Distributed locks with Redis").
	CancelMargin time.Duration
	Warnings     []Warning
}

// CancelMargin returns lease × 0.01 + 2 ms, the drift allowance of Redlock
// clients (redis.io/docs/manual/patterns/distributed-locks): a holder must
// stop that long before its lease could have ended.
func CancelMargin(lease time.Duration) time.Duration {
	return lease/100 + 2*time.Millisecond
}

// RenewsAfterEnd reports whether renewals every `every` come too late for a
// lease of `lease`: not before the lease, less its CancelMargin, can no
// longer be proven held (RENEW_AFTER_END; lockctl run refuses it, the
// checklist fails it). A fixed lease is every = 0.
func RenewsAfterEnd(lease, every time.Duration) bool {
	return every >= lease-CancelMargin(lease)
}

// LeaseFor applies the policy to a budget. Rules (reference platform):
// ordinary → lease = budget, not renewed; trusted → lease = min(budget, cap),
// renewed every RenewEvery (default lease/3 in whole ms), bound max(budget, RenewBound).
// It returns an error when the budget is not positive, the mode is unknown or
// the policy is invalid.
func (p Policy) LeaseFor(budget time.Duration, mode Mode) (Lease, error) {
	if err := p.Validate(); err != nil {
		return Lease{}, err
	}
	if budget <= 0 {
		return Lease{}, fmt.Errorf("budget %s must be positive", budget)
	}
	l := Lease{Budget: budget, Mode: mode}
	switch mode {
	case ModeOrdinary:
		l.Lease = budget
	case ModeTrusted:
		l.Lease = min(budget, p.LeaseCap)
		l.Renewable = true
		l.RenewEvery = p.RenewEvery
		if l.RenewEvery == 0 {
			// whole milliseconds, as every output shows it (a 1s lease
			// renews every 333ms, not 333.333333ms)
			l.RenewEvery = max((l.Lease / 3).Truncate(time.Millisecond), time.Millisecond)
		}
		l.RenewBound = max(budget, p.RenewBound)
		if rest := budget - l.Lease; rest > 0 {
			l.Renewals = int64((rest + l.RenewEvery - 1) / l.RenewEvery)
		}
	default:
		return Lease{}, fmt.Errorf("mode %q is not one of trusted, ordinary", mode)
	}
	l.TakeoverWait = l.Lease
	l.CancelMargin = CancelMargin(l.Lease)
	l.Warnings = p.warnings(l)
	return l, nil
}

func (p Policy) warnings(l Lease) []Warning {
	var ws []Warning
	add := func(code, format string, args ...any) {
		ws = append(ws, Warning{Code: code, Message: fmt.Sprintf(format, args...)})
	}
	if l.Budget > CheckpointAfter {
		add(WarnCheckpoint, "budget %s is over %s: checkpoint stable units of work so a take-over resumes instead of starting over", FormatDuration(l.Budget), FormatDuration(CheckpointAfter))
	}
	if l.Mode == ModeOrdinary && l.Budget > p.LeaseCap {
		add(WarnCrashBlocks, "fixed lease %s is over the %s cap: a crashed holder blocks the key for the whole budget", FormatDuration(l.Lease), FormatDuration(p.LeaseCap))
	}
	if l.Lease < time.Second {
		add(WarnSubsecond, "lease %s is under 1s: check the units (ms vs s); sub-second leases need PX, not EX", FormatDuration(l.Lease))
	}
	if l.Renewable {
		switch {
		case RenewsAfterEnd(l.Lease, l.RenewEvery):
			add(WarnRenewNotNeeded, "renew-every %s is not shorter than the lease %s minus its cancel margin %s: the lease ends before it is renewed",
				FormatDuration(l.RenewEvery), FormatDuration(l.Lease), FormatDuration(l.CancelMargin))
		case l.RenewEvery*2 >= l.Lease:
			add(WarnRenewTooSlow, "renew-every %s is at least half the lease %s: one missed renewal loses the lock", FormatDuration(l.RenewEvery), FormatDuration(l.Lease))
		}
	}
	return ws
}

// PolicyReport is a Policy in the stable JSON shape of `lockctl lease`
// (durations in ms).
type PolicyReport struct {
	LeaseCapMS   int64  `json:"lease_cap_ms"`
	RenewBoundMS int64  `json:"renew_bound_ms"`
	RenewEveryMS *int64 `json:"renew_every_ms,omitempty"`
}

// Report returns the policy in ms; renew_every_ms is omitted when it is lease/3.
func (p Policy) Report() PolicyReport {
	r := PolicyReport{LeaseCapMS: p.LeaseCap.Milliseconds(), RenewBoundMS: p.RenewBound.Milliseconds()}
	if p.RenewEvery > 0 {
		ms := p.RenewEvery.Milliseconds()
		r.RenewEveryMS = &ms
	}
	return r
}

// LeaseReport is a Lease in the stable JSON shape of `lockctl lease`:
// durations in ms; renew_every_ms and renew_bound_ms are null when the lease
// is not renewable.
type LeaseReport struct {
	BudgetMS       int64     `json:"budget_ms"`
	Mode           Mode      `json:"mode"`
	LeaseMS        int64     `json:"lease_ms"`
	Renewable      bool      `json:"renewable"`
	RenewEveryMS   *int64    `json:"renew_every_ms"`
	RenewBoundMS   *int64    `json:"renew_bound_ms"`
	Renewals       int64     `json:"renewals"`
	TakeoverWaitMS int64     `json:"takeover_wait_ms"`
	CancelMarginMS int64     `json:"cancel_margin_ms"`
	Warnings       []Warning `json:"warnings"`
}

// Report returns the lease in its JSON shape; Warnings is never null.
func (l Lease) Report() LeaseReport {
	r := LeaseReport{
		BudgetMS: l.Budget.Milliseconds(), Mode: l.Mode, LeaseMS: l.Lease.Milliseconds(),
		Renewable: l.Renewable, Renewals: l.Renewals,
		TakeoverWaitMS: l.TakeoverWait.Milliseconds(), CancelMarginMS: l.CancelMargin.Milliseconds(),
		Warnings: l.Warnings,
	}
	if l.Renewable {
		every, bound := l.RenewEvery.Milliseconds(), l.RenewBound.Milliseconds()
		r.RenewEveryMS, r.RenewBoundMS = &every, &bound
	}
	if r.Warnings == nil {
		r.Warnings = []Warning{}
	}
	return r
}
