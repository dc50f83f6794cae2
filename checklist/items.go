// Package checklist is the long-task review of lockctl: items with stable
// ids in the order of a task's life (identity, lock key, lease, cancellation,
// commit check, recovery), the task spec that declares a task, the rules that
// evaluate a spec against lockcore's policy, and the report formats
// (Markdown, JUnit XML, SARIF 2.1.0, GitHub workflow annotations).
//
// It never prints, reads flags or exits: callers pass a spec and options and
// get a Report back.
package checklist

// Sections in the order of a task's life: where the caller's identity is
// established, how the lock key tells objects apart, the lease, how
// cancellation travels, whether the commit confirms the right to write, and
// how the task recovers.
var Sections = []string{"identity", "lock_key", "lease", "cancellation", "commit_check", "recovery"}

// Item is one question of the review. ID is stable ("<section>.<name>") and
// used by every format (JSON id, JUnit testcase, SARIF rule id).
type Item struct {
	ID      string `json:"id"`
	Section string `json:"section"`
	// Question is what the reviewer asks.
	Question string `json:"question"`
	// Why is what goes wrong when the answer is no, in one or two lines.
	Why string `json:"why"`
	// Verify is a command, a query or an experiment that checks the answer;
	// commands are in backticks (Markdown code spans).
	Verify string `json:"verify"`
	// Source is where the rule comes from.
	Source string `json:"source"`
	// rule evaluates a spec; nil means only a person can answer (manual).
	rule rule
}

// Items returns the review's items in order (a copy the caller may keep).
func Items() []Item {
	out := make([]Item, len(items))
	copy(out, items)
	return out
}

// Sources cited by the items.
const (
	srcPlatform   = "reference platform design: trusted status is established by the server (DESIGN.md, lease policy)"
	srcLockKey    = "reference platform design: LockKey names a request field whose value builds the key (DESIGN.md, lock key)"
	srcPolicy     = "reference platform lease policy: ordinary lease = budget; trusted lease = min(budget, cap), renewed up to max(budget, bound) (lockcore.Policy.LeaseFor)"
	srcRedisLock  = "Redis docs, \"Distributed locks with Redis\": a random value per lock, released by a script that checks it"
	srcKleppmann  = "Kleppmann 2016, \"How to do distributed locking\": fencing tokens"
	srcCluster    = "Redis Cluster specification, \"Hash tags\""
	srcOWASP      = "OWASP API Security Top 10 2023, API1: Broken Object Level Authorization"
	srcStripe     = "Stripe API docs, \"Idempotent requests\"; DESIGN.md: idempotency is separate from locking"
	srcOutbox     = "Transactional outbox pattern (microservices.io, \"Pattern: Transactional outbox\")"
	srcCheckpoint = "reference platform design: tasks over 10 minutes checkpoint stable units of work (lockcore.CheckpointAfter)"
)

var items = []Item{
	{
		ID: "identity.server-established", Section: "identity",
		Question: "Is the caller's trusted status established by the server (an authenticated background context), never by a field of the request?",
		Why:      "Any caller can set a request field; a trusted lease is renewed for hours, so whoever can claim it holds the object's lock that long.",
		Verify:   "Call the entry as an untrusted client with the trust field set (e.g. `\"trusted\": true`): the task must still run as ordinary; find where the handler decides the mode.",
		Source:   srcPlatform, rule: ruleServerEstablished,
	},
	{
		ID: "identity.entry-mode", Section: "identity",
		Question: "Does the entry match the mode: HTTP and script calls ordinary, background, cron and consumer tasks trusted?",
		Why:      "A renewed lease held by an interactive call keeps the object locked long after its caller gave up.",
		Verify:   "`lockctl lease --budget <budget> --mode both`",
		Source:   srcPolicy, rule: ruleEntryMode,
	},
	{
		ID: "identity.caller-authorized", Section: "identity",
		Question: "Is the caller allowed to act on the object whose id keys the lock, checked before the lock is taken?",
		Why:      "A lock serializes work on an object; it does not authorize it.",
		Verify:   "Call the entry with another tenant's id: it must be refused before any lock key appears (`lockctl inspect --pattern 'lock:*'`).",
		Source:   srcOWASP,
	},
	{
		ID: "lock_key.per-object", Section: "lock_key",
		Question: "Does the lock key hold the value of a request field (OrderId → lock:OrderId:order-demo-001), so one object is exclusive and different objects do not queue together?",
		Why:      "Without a field, or with a template lacking {value}, every object shares one lock and all tasks queue behind each other.",
		Verify:   "`lockctl inspect --pattern 'lock:OrderId:*'` while two orders run: two keys, one per order.",
		Source:   srcLockKey, rule: rulePerObject,
	},
	{
		ID: "lock_key.cluster-slot", Section: "lock_key",
		Question: "In Redis Cluster, do the lock key and its fence counter share a hash tag, so one script touches both?",
		Why:      "Keys on different slots make the acquire script fail with CROSSSLOT; the fence cannot be issued atomically with the lock.",
		Verify:   "`redis-cli -c CLUSTER KEYSLOT <lock key>` and `redis-cli -c CLUSTER KEYSLOT <fence key>` print the same slot.",
		Source:   srcCluster, rule: ruleClusterSlot,
	},
	{
		ID: "lock_key.owner-token", Section: "lock_key",
		Question: "Does each acquisition store a random owner token in the lock key?",
		Why:      "With a constant or host-only value an old holder, or another process on the same host, passes the owner check and renews or releases the new holder's lock.",
		Verify:   "`lockctl inspect <lock key>` (CONSTANT_OWNER); `lockctl simulate unsafe-release --owner-check=false`",
		Source:   srcRedisLock, rule: ruleOwnerToken,
	},
	{
		ID: "lock_key.owner-checked-release", Section: "lock_key",
		Question: "Are release and renewal compare-and-act scripts that check the owner token?",
		Why:      "A plain DEL or PEXPIRE by a holder whose lease ended frees or extends the next holder's lock.",
		Verify:   "`lockctl simulate unsafe-release --owner-check=false`",
		Source:   srcRedisLock, rule: ruleRelease,
	},
	{
		ID: "lease.matches-policy", Section: "lease",
		Question: "Is the lease the one the policy gives this budget and mode (ordinary: the budget, fixed; trusted: min(budget, cap), renewed)?",
		Why:      "An ordinary lease shorter than its budget expires mid-work and a waiter takes over; a renewable lease above the cap blocks the key that long after a crash.",
		Verify:   "`lockctl lease --budget <budget> --mode <mode>`; live: `lockctl checklist --spec <spec> --redis <url> --value <value>`",
		Source:   srcPolicy, rule: ruleMatchesPolicy,
	},
	{
		ID: "lease.units", Section: "lease",
		Question: "Is the lease at least 1 s, i.e. were milliseconds and seconds not mixed up?",
		Why:      "A TTL of 120 meant as seconds and read as ms lives 120 ms; EX rejects sub-second values, which need PX.",
		Verify:   "`lockctl lease --budget <lease> --mode ordinary` (SUBSECOND_LEASE); `redis-cli PTTL <lock key>` while the task runs.",
		Source:   "Redis docs, SET: EX seconds, PX milliseconds", rule: ruleUnits,
	},
	{
		ID: "lease.renew-sets", Section: "lease",
		Question: "Does a renewal set the TTL back to one lease, rather than add a lease to what is left?",
		Why:      "Adding drifts the TTL upward with every renewal: 10 s renewed every 8 s reaches ~15 min after an hour.",
		Verify:   "`redis-cli PTTL <lock key>` across renewals never exceeds the lease; `lockctl inspect <lock key>` (LEASE_OVER_CAP)",
		Source:   srcPolicy, rule: ruleRenewSets,
	},
	{
		ID: "lease.renew-interval", Section: "lease",
		Question: "Is a renewable lease renewed at most every lease/3, so two renewals can fail before it ends?",
		Why:      "At lease/2 or slower one missed renewal (a GC pause, a slow Redis) loses the lock.",
		Verify:   "`lockctl simulate renewal-loss --renew-every <renew_every>`",
		Source:   srcPolicy, rule: ruleRenewInterval,
	},
	{
		ID: "lease.renewal-bound", Section: "lease",
		Question: "Does renewal stop at the renewal bound, max(budget, bound), and when the holder's worker ends?",
		Why:      "A renewer that outlives its worker keeps the object locked with nobody working.",
		Verify:   "`lockctl watch <value>` (RENEWED_PAST_BOUND); `lockctl simulate long-budget`",
		Source:   srcPolicy,
	},
	{
		ID: "cancellation.on-lease-loss", Section: "cancellation",
		Question: "Is the work cancelled as soon as the lease can no longer be proven (a renewal failed or the lock is gone)?",
		Why:      "A key vanishing does not stop the old holder's thread; without cancellation it carries on as a stale writer.",
		Verify:   "`lockctl simulate renewal-loss --cancel-on-loss=false`",
		Source:   srcKleppmann, rule: ruleOnLeaseLoss,
	},
	{
		ID: "cancellation.budget-enforced", Section: "cancellation",
		Question: "Is the execution budget enforced, cancelling the work when it runs out?",
		Why:      "During a blocking call the renewer keeps renewing while nothing progresses; only the budget stops it.",
		Verify:   "`lockctl simulate long-budget`",
		Source:   srcPolicy, rule: ruleBudgetEnforced,
	},
	{
		ID: "cancellation.external-call-timeout", Section: "cancellation",
		Question: "Is every external call bounded by a timeout no longer than the lease?",
		Why:      "A call that outlives the lease returns after another holder took over, and its result is written by a stale holder.",
		Verify:   "`lockctl simulate stale-writer --pause <external_call_timeout>`",
		Source:   srcKleppmann, rule: ruleCallTimeout,
	},
	{
		ID: "commit_check.fenced-write", Section: "commit_check",
		Question: "Does the commit confirm the right to write at the write boundary (a fencing token or a version compared by the store)?",
		Why:      "Checking the TTL before writing does not stop a stale writer: it can pause between the check and the write.",
		Verify:   "`lockctl simulate stale-writer --fencing=false`; `lockctl simulate stale-writer --check ttl`",
		Source:   srcKleppmann, rule: ruleFencedWrite,
	},
	{
		ID: "commit_check.fence-counter", Section: "commit_check",
		Question: "Does each acquisition issue a fencing token from a counter (INCR in the acquire script)?",
		Why:      "Without a monotonic token the store cannot tell the current holder's write from a stale one.",
		Verify:   "`redis-cli GET <fence key>` increases on every acquisition; live: `lockctl checklist --spec <spec> --redis <url> --value <value>`",
		Source:   srcKleppmann, rule: ruleFenceCounter,
	},
	{
		ID: "commit_check.boundary-refuses", Section: "commit_check",
		Question: "Does the write boundary refuse a token older than the newest it has seen (UPDATE ... WHERE fence < $token, or the API's version check)?",
		Why:      "A token protects nothing unless the store compares it.",
		Verify:   "Run the store's update by hand with an older token: it must change 0 rows; `lockctl simulate stale-writer`",
		Source:   srcKleppmann,
	},
	{
		ID: "recovery.idempotency-key", Section: "recovery",
		Question: "Does every side effect carry a stable idempotency key (RequestId, EventId) that stays the same across retries?",
		Why:      "A lock does not stop a retry after a lost reply; the receiver deduplicates only on a stable key.",
		Verify:   "`lockctl simulate duplicate-delivery --idempotency-key=false`",
		Source:   srcStripe, rule: ruleIdempotencyKey,
	},
	{
		ID: "recovery.unique-constraint", Section: "recovery",
		Question: "Does the store refuse a second record for the same key (a unique constraint)?",
		Why:      "Two holders, or a holder and a retry, can both pass an application-level check; only the store's constraint is atomic.",
		Verify:   "Insert the same idempotency key twice: the second insert must fail with a unique violation.",
		Source:   srcStripe, rule: ruleUniqueConstraint,
	},
	{
		ID: "recovery.outbox", Section: "recovery",
		Question: "When an external send succeeded but the local record did not, does the task recover (an outbox committed with the record)?",
		Why:      "The send and the record commit separately; a crash between them loses one or repeats the other.",
		Verify:   "`lockctl simulate duplicate-delivery`; kill the task between the send and the commit and check the next run.",
		Source:   srcOutbox, rule: ruleOutbox,
	},
	{
		ID: "recovery.checkpoints", Section: "recovery",
		Question: "Does a task with a budget over 10 minutes checkpoint stable units of work, so a take-over resumes instead of starting over?",
		Why:      "Without checkpoints every crash or lost lease repeats the whole budget of work.",
		Verify:   "`lockctl simulate crash-recovery`",
		Source:   srcCheckpoint, rule: ruleCheckpoints,
	},
}
