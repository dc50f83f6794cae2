// Package simulate replays lock failures (stale writers, unsafe releases,
// lost renewals, crashes, duplicate deliveries, failover, clock jumps) on a
// deterministic virtual clock in ms, checks invariants over the run and says
// which guard saved, contained or would have saved it. A live runner plays the
// same scenario against a real Redis with lockcore's scripts.
//
// The point it makes visible (Kleppmann 2016, "How to do distributed
// locking"): the lock, the execution budget, the cancellation signal and the
// write boundary are four different things, and a vanished key does not stop
// the old holder.
//
// It never prints, reads flags or exits: callers pass a Scenario and get a
// Result.
package simulate

import (
	"fmt"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/lockcore"
)

// Action is what a step of a scenario does.
type Action string

// The actions of a scenario step (docs/simulate.md, "Scenario files").
const (
	// ActAcquire is SET NX PX with a fresh owner token and the next fencing
	// token; with Wait it retries until obtained or the wait ends.
	ActAcquire Action = "acquire"
	// ActRenew is one explicit renewal (PEXPIRE, owner-checked or blind).
	ActRenew Action = "renew"
	// ActRelease deletes the lock (owner-checked or a blind DEL).
	ActRelease Action = "release"
	// ActWork is For ms of critical-section work; cancellable.
	ActWork Action = "work"
	// ActCall is a blocking external call of For ms: the worker stalls, the
	// renewer keeps renewing.
	ActCall Action = "call"
	// ActWrite is a write that reaches the store (the write boundary) with
	// the holder's fencing token.
	ActWrite Action = "write"
	// ActSend is an external side effect with an optional Key the receiver
	// dedupes when the idempotency-key guard is on.
	ActSend Action = "send"
	// ActPause freezes the whole process (GC, SIGSTOP, VM migration) for For ms:
	// worker and renewer.
	ActPause Action = "pause"
	// ActPartition cuts the process off from Redis for For ms; work goes on.
	ActPartition Action = "partition"
	// ActCrash kills the process; its key stays until it expires.
	ActCrash Action = "crash"
	// ActFailover promotes a replica that lacks the writes of the last
	// ReplicationLagMS: an acknowledged lock can vanish.
	ActFailover Action = "failover"
	// ActClockJump steps the server's clock forward by By ms: leases end early.
	ActClockJump Action = "clock_jump"
	// ActRestart restarts Redlock nodes empty (no persistence): a node down
	// since a crash comes back, an up one restarts at once.
	ActRestart Action = "restart"
)

// fault reports actions that happen to a process or the server from
// outside, at their time, rather than as a step of the actor's program.
func (a Action) fault() bool {
	switch a {
	case ActPause, ActPartition, ActCrash, ActFailover, ActClockJump, ActRestart:
		return true
	}
	return false
}

// Actions lists every action in the order docs/simulate.md documents them.
var Actions = []Action{ActAcquire, ActRenew, ActRelease, ActWork, ActCall, ActWrite, ActSend, ActPause, ActPartition, ActCrash, ActFailover, ActClockJump, ActRestart}

// serverActor is the actor name of events that belong to Redis itself.
const serverActor = "redis"

// Step is one scripted event of a scenario. Times are virtual ms from the
// start. An actor's steps other than faults form a sequential program: a step
// that falls while its actor is paused, busy in work/call or waiting to
// acquire runs when the actor can run again, and the actor's later steps move
// by the same delay. Faults (pause, partition, crash, failover, clock_jump)
// happen at their time.
type Step struct {
	AtMS  int64  `json:"at_ms"`
	Actor string `json:"actor,omitempty"`
	Do    Action `json:"do"`
	// ForMS is the length of work, call, pause and partition.
	ForMS int64 `json:"for_ms,omitempty"`
	// ByMS is how far clock_jump moves the server's clock.
	ByMS int64 `json:"by_ms,omitempty"`
	// WaitMS is how long acquire retries before giving up (0: one attempt).
	WaitMS int64 `json:"wait_ms,omitempty"`
	// Key is the idempotency key of a send (default "<actor>-send-<n>").
	Key string `json:"key,omitempty"`
	// Nodes are the Redlock nodes (1-based) a partition cuts the actor off
	// from, or a crash, restart, failover or clock_jump hits (empty: a
	// partition cuts off every node; the other faults hit the one server
	// of a 1-node scenario).
	Nodes []int `json:"nodes,omitempty"`
	// Note is shown in the timeline.
	Note string `json:"note,omitempty"`
	// Line is the line of the step in a scenario file (0 for built-ins).
	Line int `json:"-"`
}

// Guards are the four protections the simulator can switch off (each on by
// default).
type Guards struct {
	// Fencing: the store refuses a write whose fencing token is lower than
	// the highest it has seen (Kleppmann 2016, fencing tokens).
	Fencing bool `json:"fencing"`
	// OwnerCheck: renew and release compare the owner token before acting
	// (Redis docs, "Distributed locks with Redis").
	OwnerCheck bool `json:"owner_check"`
	// CancelOnLoss: the work is cancelled once the lease can no longer be
	// proven (lockcore.Keeper), and at the budget's end.
	CancelOnLoss bool `json:"cancel_on_loss"`
	// IdempotencyKey: external sends carry a stable key the receiver dedupes.
	IdempotencyKey bool `json:"idempotency_key"`
}

// AllGuards returns every guard on.
func AllGuards() Guards {
	return Guards{Fencing: true, OwnerCheck: true, CancelOnLoss: true, IdempotencyKey: true}
}

// GuardNames are the guards' names as used in files, flags and output.
var GuardNames = []string{"fencing", "owner_check", "cancel_on_loss", "idempotency_key"}

// Get returns the guard called name (one of GuardNames).
func (g Guards) Get(name string) bool {
	switch name {
	case "fencing":
		return g.Fencing
	case "owner_check":
		return g.OwnerCheck
	case "cancel_on_loss":
		return g.CancelOnLoss
	case "idempotency_key":
		return g.IdempotencyKey
	}
	return false
}

// With returns g with the guard called name set to on.
func (g Guards) With(name string, on bool) Guards {
	switch name {
	case "fencing":
		g.Fencing = on
	case "owner_check":
		g.OwnerCheck = on
	case "cancel_on_loss":
		g.CancelOnLoss = on
	case "idempotency_key":
		g.IdempotencyKey = on
	}
	return g
}

// PolicySpec is a scenario's lease: either a fixed Lease (renewed every
// RenewEvery when that is set), or a Budget and Mode resolved by lockcore's
// policy with optional LeaseCap, RenewBound and RenewEvery overrides.
type PolicySpec struct {
	Lease      time.Duration `json:"lease,omitempty"`
	Budget     time.Duration `json:"budget,omitempty"`
	Mode       lockcore.Mode `json:"mode,omitempty"`
	RenewEvery time.Duration `json:"renew_every,omitempty"`
	LeaseCap   time.Duration `json:"lease_cap,omitempty"`
	RenewBound time.Duration `json:"renew_bound,omitempty"`
}

// Fence sources (the --fence-source flag).
const (
	// FenceRedis: the fence counter lives in Redis next to the lock and is
	// lost with unreplicated writes on failover.
	FenceRedis = "redis"
	// FenceStore: the fence counter comes from a durable source (the store);
	// it never goes backwards.
	FenceStore = "store"
)

// Checks a holder makes right before a write (the --check flag).
const (
	CheckNone = "none"
	// CheckTTL: the holder asks Redis whether its key is still there with a
	// positive PTTL right before writing. It does not help when the pause
	// falls between the check and the write (Kleppmann 2016).
	CheckTTL = "ttl"
)

// Scenario is a timeline of steps with a lease policy and guard settings.
type Scenario struct {
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	Policy      PolicySpec `json:"policy"`
	Guards      Guards     `json:"guards"`
	// FenceStart is the first fencing token issued (default 1; 33 for built-ins,
	// the numbers of Kleppmann 2016).
	FenceStart int64 `json:"fence_start,omitempty"`
	// FenceSource is FenceRedis (default) or FenceStore.
	FenceSource string `json:"fence_source,omitempty"`
	// Check is CheckNone (default) or CheckTTL.
	Check string `json:"check,omitempty"`
	// Checkpoints: sends are checkpointed durably, so a take-over resumes
	// after the last one instead of starting over.
	Checkpoints bool `json:"checkpoints,omitempty"`
	// ReplicationLagMS is how far the replica lags the primary (default 1000):
	// a failover loses the lock writes of the last ReplicationLagMS.
	ReplicationLagMS int64 `json:"replication_lag_ms,omitempty"`
	// Nodes is how many independent Redis nodes hold the lock (0 or 1: one
	// server; 2 to MaxNodes: Redlock, engine_redlock.go).
	Nodes int    `json:"nodes,omitempty"`
	Steps []Step `json:"steps"`
}

// leaseParams is the resolved lease of a scenario, in ms.
type leaseParams struct {
	lease, renewEvery, retry, margin, budget, bound int64
	renewable                                       bool
	mode                                            lockcore.Mode
}

// MaxHorizon is how much virtual time a scenario may span: its times,
// lengths and policy durations added up. Beyond it, sums of times in ms, and
// live mode's real times in ns, would overflow.
const MaxHorizon = 10 * 365 * 24 * time.Hour

// MaxFenceStart is the highest fence_start: the lock scripts' Lua numbers
// are doubles, exact only up to 2^53, and the run issues more tokens after.
const MaxFenceStart = 1 << 52

// MaxActors and MaxSteps bound a scenario's size (docs/guides/simulate-limits.md):
// time and memory are linear in both (each instant looks only at the actors
// with something due), 5,000 actors and 10,000 steps take about 0.5 s on a
// busy 2-core machine. A scenario file's schema allows at most MaxSteps events.
const (
	MaxActors = 5000
	MaxSteps  = 10000
)

// resolve checks the scenario's size (checkSize, checkHorizon,
// checkFenceStart) and resolves its policy.
func (sc *Scenario) resolve() (leaseParams, error) {
	if err := sc.checkSize(); err != nil {
		return leaseParams{}, err
	}
	if err := sc.checkHorizon(); err != nil {
		return leaseParams{}, err
	}
	if err := sc.checkFenceStart(); err != nil {
		return leaseParams{}, err
	}
	p, err := sc.Policy.resolve()
	if err != nil {
		return p, err
	}
	return p, sc.checkNodes(p)
}

// checkSize refuses a scenario of more than MaxSteps steps or MaxActors
// actors (the server, the actor of failover and clock_jump, not counted).
func (sc *Scenario) checkSize() error {
	if len(sc.Steps) > MaxSteps {
		return fmt.Errorf("scenario %q has %d events; at most %d", sc.Name, len(sc.Steps), MaxSteps)
	}
	actors := map[string]bool{}
	for _, st := range sc.Steps {
		if st.Actor != serverActor {
			actors[st.Actor] = true
		}
	}
	if len(actors) > MaxActors {
		return fmt.Errorf("scenario %q has %d actors; at most %d", sc.Name, len(actors), MaxActors)
	}
	return nil
}

// checkHorizon refuses a scenario whose times, lengths and policy durations
// add up to more than MaxHorizon.
func (sc *Scenario) checkHorizon() error {
	const maxMS = int64(MaxHorizon / time.Millisecond)
	total := time.Duration(0)
	add := func(d time.Duration) bool {
		if d < 0 || d > MaxHorizon || total+d > MaxHorizon {
			return false
		}
		total += d
		return true
	}
	addMS := func(v int64) bool { return add(time.Duration(min(max(v, 0), maxMS+1)) * time.Millisecond) }
	ok := add(sc.Policy.Lease) && add(sc.Policy.Budget) && add(sc.Policy.RenewEvery) && add(sc.Policy.LeaseCap) &&
		add(sc.Policy.RenewBound) && addMS(sc.ReplicationLagMS)
	for _, st := range sc.Steps {
		ok = ok && addMS(st.AtMS) && addMS(st.ForMS) && addMS(st.ByMS) && addMS(st.WaitMS)
	}
	if !ok {
		return fmt.Errorf("scenario %q spans more than %s of virtual time (its times, lengths and policy added up); shorten it", sc.Name, lockcore.FormatDuration(MaxHorizon))
	}
	return nil
}

// fenceStartError refuses fence_start v (decimal digits), over MaxFenceStart.
func fenceStartError(v string) error {
	return fmt.Errorf("%s is over 2^52 (%d): the lock scripts count in Lua numbers, exact only to 2^53", v, int64(MaxFenceStart))
}

// checkFenceStart refuses a fence_start over MaxFenceStart.
func (sc *Scenario) checkFenceStart() error {
	if sc.FenceStart > MaxFenceStart {
		return fenceStartError(strconv.FormatInt(sc.FenceStart, 10))
	}
	return nil
}

// resolve turns the PolicySpec into lease parameters; with a Budget it uses
// lockcore's Policy.LeaseFor. It returns an error naming the bad value.
func (ps PolicySpec) resolve() (leaseParams, error) {
	var p leaseParams
	switch {
	case ps.Budget > 0:
		pol := lockcore.DefaultPolicy()
		if ps.LeaseCap > 0 {
			pol.LeaseCap = ps.LeaseCap
		}
		if ps.RenewBound > 0 {
			pol.RenewBound = ps.RenewBound
		}
		pol.RenewEvery = ps.RenewEvery
		mode := ps.Mode
		if mode == "" {
			mode = lockcore.ModeTrusted
		}
		l, err := pol.LeaseFor(ps.Budget, mode)
		if err != nil {
			return p, err
		}
		p = leaseParams{lease: ms(l.Lease), renewable: l.Renewable, renewEvery: ms(l.RenewEvery),
			margin: ms(l.CancelMargin), budget: ms(l.Budget), bound: ms(l.RenewBound), mode: mode}
	case ps.Lease > 0:
		p = leaseParams{lease: ms(ps.Lease), margin: ms(lockcore.CancelMargin(ps.Lease)), mode: lockcore.ModeOrdinary}
		if ps.RenewEvery > 0 {
			p.renewable, p.renewEvery, p.mode = true, ms(ps.RenewEvery), lockcore.ModeTrusted
			p.bound = ms(ps.RenewBound)
		}
	default:
		return p, fmt.Errorf("policy needs a lease or a budget")
	}
	if p.lease < 1 {
		given := ps.Lease
		if ps.Budget > 0 {
			given = time.Duration(p.lease) * time.Millisecond
		}
		return p, fmt.Errorf("lease %s is under 1ms", given)
	}
	if p.renewable && p.renewEvery < 1 {
		// The virtual clock counts whole ms: a 0ms renewal interval would
		// renew at the same instant forever.
		return p, fmt.Errorf("renew-every %s is under 1ms", lockcore.FormatDuration(ps.RenewEvery))
	}
	if p.renewable {
		// lockcore.Keeper's retry interval after a failed renewal.
		p.retry = min(max(p.renewEvery/4, 1), 500)
	}
	return p, nil
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// fmtMS formats virtual ms the way people write durations ("30.5s", "13h").
func fmtMS(v int64) string {
	return lockcore.FormatDuration(time.Duration(v) * time.Millisecond)
}
