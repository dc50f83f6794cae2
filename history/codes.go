// Package history is the vocabulary every run of lockctl shares, simulated,
// live or trial: the violation codes and verdicts, the holders' lanes, the
// write record with its stale-write and duplicate-key checks, and the
// neutral view of a run (Run) that the renderers draw. It imports no other
// lockctl package, so every domain package may stand on it.
package history

// Violation codes: the invariants a run is judged on. Each is defined here
// only; docs/simulate.md and docs/trial.md list them.
const (
	// CodeStaleWrite: the store accepted a write from an older acquisition
	// after it had accepted one from a newer acquisition (Kleppmann 2016: the
	// stale writer's write corrupts the newer holder's).
	CodeStaleWrite = "STALE_WRITE_ACCEPTED"
	// CodeOverlap: two processes actively working in the critical section at
	// the same time; a paused process is not working.
	CodeOverlap = "OVERLAP"
	// CodeForeignRelease: a release deleted another holder's key (blind DEL).
	CodeForeignRelease = "FOREIGN_RELEASE"
	// CodeForeignRenew: a renewal extended another holder's key (blind PEXPIRE).
	CodeForeignRenew = "FOREIGN_RENEW"
	// CodeLockLost: work went on after the holder's lease was lost.
	CodeLockLost = "LOCK_LOST_WHILE_WORKING"
	// CodeDuplicate: one logical external effect happened twice (an
	// idempotency key committed again).
	CodeDuplicate = "DUPLICATE_EFFECT"
	// CodeFenceBackwards: an acquisition got a fencing token not above one
	// issued before it.
	CodeFenceBackwards = "FENCE_BACKWARDS"
	// CodeInvariant: the user's check query returned rows (e.g. a balance
	// that differs from its ledger: a lost update).
	CodeInvariant = "INVARIANT_VIOLATED"
	// CodeNotLinearizable: Porcupine proved that a resource's reads and
	// writes fit no order of one register.
	CodeNotLinearizable = "NOT_LINEARIZABLE"
)

// Verdicts of a run.
const (
	VerdictSafe   = "safe"
	VerdictUnsafe = "unsafe"
	// VerdictInconclusive: the run saw nothing to judge (a trial with no
	// worker started, or no operation and no lock event): never safe.
	VerdictInconclusive = "inconclusive"
)
