package checklist

import (
	"fmt"
	"time"

	"github.com/lockctl/lockctl/lockcore"
)

// Status is an item's verdict.
type Status string

// Statuses, from best to worst; manual is a question only a person can answer.
const (
	StatusPass   Status = "pass"
	StatusManual Status = "manual"
	StatusWarn   Status = "warn"
	StatusFail   Status = "fail"
)

// verdict is what a rule returns: the status, why, and the spec field path it
// comes from (its line is looked up in the spec).
type verdict struct {
	status Status
	reason string
	path   string
}

// env is what every rule sees: the spec and what follows from it under the policy.
type env struct {
	s      *Spec
	policy lockcore.Policy
	// want is the lease the policy gives the spec's budget and mode.
	want lockcore.Lease
	// lease is the spec's lease, else want.Lease.
	lease time.Duration
}

type rule func(e *env) verdict

func pass(path, format string, args ...any) verdict {
	return verdict{StatusPass, fmt.Sprintf(format, args...), path}
}
func warn(path, format string, args ...any) verdict {
	return verdict{StatusWarn, fmt.Sprintf(format, args...), path}
}
func fail(path, format string, args ...any) verdict {
	return verdict{StatusFail, fmt.Sprintf(format, args...), path}
}
func manual(path, format string, args ...any) verdict {
	return verdict{StatusManual, fmt.Sprintf(format, args...), path}
}

func fd(d time.Duration) string { return lockcore.FormatDuration(d) }

// ruleServerEstablished: a trusted status taken from a request field fails;
// a trusted mode with no identity fails (reference platform design).
func ruleServerEstablished(e *env) verdict {
	const p = "identity.trusted_by"
	switch e.s.Identity.TrustedBy {
	case "request-field":
		return fail(p, "trusted status taken from a request field: any caller can claim it and hold the lock for the renewal bound")
	case "none":
		if e.s.Lock.Mode == lockcore.ModeTrusted {
			return fail(p, "mode trusted but nothing establishes the caller's trust; it must come from the server's execution context")
		}
		return pass(p, "ordinary call: no trusted status to establish")
	}
	return pass(p, "trusted status comes from the server context")
}

// ruleEntryMode: an HTTP or script entry running trusted warns.
func ruleEntryMode(e *env) verdict {
	if e.s.Entry == "http" || e.s.Entry == "script" {
		if e.s.Lock.Mode == lockcore.ModeTrusted {
			return warn("lock.mode", "the %s entry runs as trusted: its lease is renewed for up to %s after the caller gave up; run the trusted part as a background task", e.s.Entry, fd(e.want.RenewBound))
		}
	}
	return pass("lock.mode", "%s entry, %s mode", e.s.Entry, e.s.Lock.Mode)
}

// keySpec builds the spec's keys without the cluster check.
func (e *env) keySpec() (*lockcore.KeySpec, error) {
	return lockcore.NewKeySpec(e.s.Lock.Field, e.s.Lock.KeyTemplate, e.s.Lock.FenceTemplate, false)
}

// rulePerObject: no field or a template without {value} fails (lockcore.NewKeySpec).
func rulePerObject(e *env) verdict {
	if e.s.Lock.Field == "" {
		return fail("lock.field", "no lock.field: the key does not name the request field whose value tells objects apart")
	}
	ks, err := e.keySpec()
	if err != nil {
		path := "lock.key_template"
		if _, lockErr := lockcore.NewKeySpec(e.s.Lock.Field, e.s.Lock.KeyTemplate, "", false); lockErr == nil {
			path = "lock.fence_template"
		}
		return fail(path, "%v", err)
	}
	return pass("lock.key_template", "one lock per %s: %s", e.s.Lock.Field, ks.Keys("<value>").Lock)
}

// ruleClusterSlot: in a cluster, lock and fence keys on different slots fail
// (Redis Cluster hash tags; lockcore.NewKeySpec with cluster set).
func ruleClusterSlot(e *env) verdict {
	if !e.s.Lock.Cluster {
		return pass("lock.cluster", "not a cluster: the two keys need no shared slot")
	}
	ks, err := e.keySpec()
	if err != nil {
		return fail("lock.key_template", "the key template is invalid (see lock_key.per-object)")
	}
	// The keys as the templates give them: the spec names no value.
	k := ks.Keys("<value>")
	if _, err := lockcore.NewKeySpec(e.s.Lock.Field, e.s.Lock.KeyTemplate, e.s.Lock.FenceTemplate, true); err != nil {
		path := "lock.key_template"
		if e.s.Lock.FenceTemplate != "" {
			path = "lock.fence_template"
		}
		return fail(path, "lock key %s hashes on %s, fence key %s on %s: the two land on different slots; put the value in a hash tag, e.g. lock:{field}:{{{value}}}",
			k.Lock, lockcore.HashTag(k.Lock), k.Fence, lockcore.HashTag(k.Fence))
	}
	return pass("lock.cluster", "lock key %s and fence key %s both hash on %s: one slot", k.Lock, k.Fence, lockcore.HashTag(k.Lock))
}

// ruleOwnerToken: a constant or host-only owner token fails (cases.md 1, 2).
func ruleOwnerToken(e *env) verdict {
	const p = "lock.owner_token"
	switch e.s.Lock.OwnerToken {
	case "constant":
		return fail(p, "constant owner token: every holder writes the same value, so an old holder's release or renewal acts on the new holder's lock")
	case "host":
		return fail(p, "host-only owner token: two processes on one host, or a restarted process, share it and pass each other's owner checks")
	}
	return pass(p, "random owner token per acquisition")
}

// ruleRelease: a blind release (plain DEL) fails (cases.md 2).
func ruleRelease(e *env) verdict {
	const p = "lock.release"
	if e.s.Lock.Release == "blind" {
		return fail(p, "blind release: a holder whose lease ended deletes the next holder's lock with a plain DEL")
	}
	return pass(p, "release compares the owner token")
}

// ruleMatchesPolicy: a lease that differs from the policy for its mode fails
// (cases.md 6: an ordinary 45s lease on a 70s budget).
func ruleMatchesPolicy(e *env) verdict {
	l := e.s.Lock
	if l.Lease == 0 {
		return pass("lock.budget", "lease derived from the policy: %s for a %s budget, %s", fd(e.want.Lease), fd(e.want.Budget), l.Mode)
	}
	got, want := time.Duration(l.Lease), e.want.Lease
	switch {
	case got == want:
		return pass("lock.lease", "lease %s is the policy's for a %s budget, %s", fd(got), fd(e.want.Budget), l.Mode)
	case l.Mode == lockcore.ModeOrdinary && got < want:
		return fail("lock.lease", "ordinary lease %s is shorter than its %s budget and never renewed: it expires mid-work and a waiter takes over (policy: lease = budget)", fd(got), fd(e.want.Budget))
	case l.Mode == lockcore.ModeOrdinary:
		return fail("lock.lease", "ordinary lease %s is longer than its %s budget: a crashed holder blocks the key past the budget (policy: lease = budget)", fd(got), fd(e.want.Budget))
	case got > e.policy.LeaseCap:
		return fail("lock.lease", "renewable lease %s is above the %s cap: a crashed holder blocks the key that long (policy: min(budget, cap) = %s)", fd(got), fd(e.policy.LeaseCap), fd(want))
	}
	return fail("lock.lease", "renewable lease %s differs from the policy's min(budget %s, cap %s) = %s", fd(got), fd(e.want.Budget), fd(e.policy.LeaseCap), fd(want))
}

// ruleUnits: a lease under 1 s warns (cases.md 10, lockcore.WarnSubsecond).
func ruleUnits(e *env) verdict {
	p := "lock.lease"
	if e.s.Lock.Lease == 0 {
		p = "lock.budget"
	}
	if e.lease < time.Second {
		return warn(p, "lease %s is under 1s: check the units (ms vs s); sub-second leases need PX, not EX", fd(e.lease))
	}
	return pass(p, "lease %s", fd(e.lease))
}

// ruleRenewSets: `renew: add` fails (cases.md 4: the TTL drifts upward).
func ruleRenewSets(e *env) verdict {
	const p = "lock.renew"
	switch {
	case e.s.Lock.Renew == "add":
		return fail(p, "renew: add adds a lease to what is left, so the TTL grows with every renewal instead of returning to one lease")
	case e.s.Lock.Renew == "set":
		return pass(p, "a renewal sets the TTL to one lease")
	case e.s.Lock.Mode == lockcore.ModeOrdinary:
		return pass("lock.mode", "ordinary lease: not renewed")
	}
	return manual(p, "lock.renew is not declared: how does a renewal change the TTL (set or add)?")
}

// ruleRenewInterval: renew_every above lease/3 warns (policy default
// lease/3); one that leaves the lease to end, cancel margin included, before
// the first renewal fails (lease's RENEW_AFTER_END; lockctl run refuses it).
func ruleRenewInterval(e *env) verdict {
	if e.s.Lock.Mode == lockcore.ModeOrdinary {
		return pass("lock.mode", "ordinary lease: not renewed")
	}
	every, p := e.want.RenewEvery, "lock.mode"
	if e.s.Lock.RenewEvery != 0 {
		every, p = time.Duration(e.s.Lock.RenewEvery), "lock.renew_every"
	}
	if lockcore.RenewsAfterEnd(e.lease, every) {
		return fail(p, "renewed every %s, not shorter than the %s lease minus its %s cancel margin: the lease ends before it is renewed (RENEW_AFTER_END)", fd(every), fd(e.lease), fd(lockcore.CancelMargin(e.lease)))
	}
	if every*3 > e.lease {
		return warn(p, "renewed every %s, above lease/3 = %s of the %s lease: one or two missed renewals lose the lock", fd(every), fd(e.lease/3), fd(e.lease))
	}
	return pass(p, "renewed every %s, at most lease/3 of the %s lease", fd(every), fd(e.lease))
}

// ruleOnLeaseLoss: no cancellation on lease loss fails (Kleppmann 2016).
func ruleOnLeaseLoss(e *env) verdict {
	const p = "cancellation.on_lease_loss"
	if e.s.Cancellation.OnLeaseLoss != nil && *e.s.Cancellation.OnLeaseLoss {
		return pass(p, "the work is cancelled when the lease is lost")
	}
	return fail(p, "the work is not cancelled when the lease is lost: the old holder carries on as a stale writer")
}

// ruleBudgetEnforced: a budget that is not enforced warns.
func ruleBudgetEnforced(e *env) verdict {
	const p = "cancellation.budget_enforced"
	switch {
	case e.s.Cancellation.BudgetEnforced == nil:
		return manual(p, "cancellation.budget_enforced is not declared: what stops the work when its %s budget runs out?", fd(e.want.Budget))
	case !*e.s.Cancellation.BudgetEnforced:
		return warn(p, "the %s budget is not enforced: a blocked worker keeps the lock renewed until the renewal bound", fd(e.want.Budget))
	}
	return pass(p, "the work is cancelled when its %s budget runs out", fd(e.want.Budget))
}

// ruleCallTimeout: an external call timeout longer than the lease fails.
func ruleCallTimeout(e *env) verdict {
	const p = "cancellation.external_call_timeout"
	t := time.Duration(e.s.Cancellation.ExternalCallTimeout)
	switch {
	case t == 0:
		return warn(p, "no external_call_timeout declared: an external call can outlive the %s lease", fd(e.lease))
	case t > e.lease:
		return fail(p, "external call timeout %s is longer than the %s lease: the call can return after another holder took over", fd(t), fd(e.lease))
	}
	return pass(p, "external calls time out after %s, within the %s lease", fd(t), fd(e.lease))
}

func (e *env) writes() bool { return e.s.Commit.Writes == nil || *e.s.Commit.Writes }

// ruleFencedWrite: `commit.check: ttl` or `none` while the task writes
// fails; a fence check without a fence counter fails (Kleppmann 2016).
func ruleFencedWrite(e *env) verdict {
	const p = "commit.check"
	if !e.writes() {
		return pass("commit.writes", "the task declares no writes")
	}
	switch e.s.Commit.Check {
	case "fence":
		if e.s.Lock.Fencing != "counter" {
			return fail(p, "commit checks a fence but lock.fencing is none: there is no token to compare")
		}
		return pass(p, "the store compares the fencing token")
	case "version":
		return pass(p, "the store applies a conditional (versioned) update")
	case "ttl":
		return fail(p, "commit checks the TTL before writing: a stale writer passes the check, pauses and then writes; compare a fencing token at the store")
	}
	return fail(p, "the task writes with no commit check: a stale writer's write is accepted")
}

// ruleFenceCounter: fencing none warns unless writes are versioned.
func ruleFenceCounter(e *env) verdict {
	const p = "lock.fencing"
	switch {
	case e.s.Lock.Fencing == "counter":
		return pass(p, "each acquisition issues a fencing token")
	case e.s.Commit.Check == "version" || !e.writes():
		return pass(p, "no fencing token; the commit is versioned or there is no write")
	}
	return warn(p, "no fencing token: the write boundary cannot tell the current holder from a stale one")
}

// ruleIdempotencyKey: no idempotency key fails.
func ruleIdempotencyKey(e *env) verdict {
	const p = "recovery.idempotency_key"
	if e.s.Recovery.IdempotencyKey == "" {
		return fail(p, "no idempotency key: a retry after a lost reply repeats the side effect")
	}
	return pass(p, "side effects are deduplicated on %s", e.s.Recovery.IdempotencyKey)
}

// ruleUniqueConstraint: no unique constraint fails.
func ruleUniqueConstraint(e *env) verdict {
	const p = "recovery.unique_constraint"
	if e.s.Recovery.UniqueConstraint == nil || !*e.s.Recovery.UniqueConstraint {
		return fail(p, "no unique constraint: two holders or a retry can both insert the same record")
	}
	return pass(p, "the store refuses a second record for the same key")
}

// ruleOutbox: no outbox warns; undeclared is manual.
func ruleOutbox(e *env) verdict {
	const p = "recovery.outbox"
	switch {
	case e.s.Recovery.Outbox == nil:
		return manual(p, "recovery.outbox is not declared: how does the task recover when a send succeeded and the record did not?")
	case !*e.s.Recovery.Outbox:
		return warn(p, "no outbox: an external send and the local record commit separately; a crash between them loses or repeats one")
	}
	return pass(p, "external sends go through an outbox")
}

// ruleCheckpoints: a budget over 10 minutes without checkpoints warns
// (lockcore.CheckpointAfter).
func ruleCheckpoints(e *env) verdict {
	b := e.want.Budget
	if every := time.Duration(e.s.Recovery.CheckpointEvery); every != 0 {
		return pass("recovery.checkpoint_every", "checkpoints every %s", fd(every))
	}
	if b > lockcore.CheckpointAfter {
		return warn("lock.budget", "budget %s is over %s without recovery.checkpoint_every: a take-over starts the work over", fd(b), fd(lockcore.CheckpointAfter))
	}
	return pass("lock.budget", "budget %s is within %s: no checkpoints needed", fd(b), fd(lockcore.CheckpointAfter))
}
