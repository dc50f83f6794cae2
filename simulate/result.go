package simulate

import (
	"slices"

	"github.com/lockctl/lockctl/history"
)

// Codes lists every violation code the simulator checks, in a fixed
// order (bit i of a mask is Codes[i]).
var Codes = []string{history.CodeStaleWrite, history.CodeOverlap, history.CodeForeignRelease, history.CodeForeignRenew, history.CodeLockLost, history.CodeDuplicate, history.CodeFenceBackwards}

const (
	bitStale uint8 = 1 << iota
	bitOverlap
	bitForeignRelease
	bitForeignRenew
	bitLockLost
	bitDuplicate
	bitFenceBackwards
)

// Violation is one broken invariant: its code, when (virtual ms), which
// actor, and a one-line explanation.
type Violation struct {
	Code    string `json:"code"`
	AtMS    int64  `json:"at_ms"`
	Actor   string `json:"actor"`
	Message string `json:"message"`
}

// ViolationCodes returns the distinct codes of vs, sorted: what a live run
// and the model are compared on (the times and messages differ by design).
func ViolationCodes(vs []Violation) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.Code)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// LockView is the lock key after an event: holder, remaining PTTL in ms on
// the server's clock, fencing token. Over Redlock nodes it is the quorum's
// view: the holder on a majority and the majority-th largest PTTL.
type LockView struct {
	Holder string `json:"holder"`
	PTTLMS int64  `json:"pttl_ms"`
	Fence  int64  `json:"fence"`
}

// Event is one line of the timeline. Lock is null when no key exists (over
// Redlock nodes: when no one holds a majority), Nodes is each Redlock node
// after the event (absent with one server);
// StoreFence is the highest fencing token the store has seen (0: none).
// Count > 1 folds repeated identical renewals, the last at UntilMS.
type Event struct {
	AtMS       int64      `json:"at_ms"`
	Actor      string     `json:"actor"`
	Kind       string     `json:"kind"`
	OK         bool       `json:"ok"`
	Fence      int64      `json:"fence,omitempty"`
	Count      int        `json:"count,omitempty"`
	UntilMS    int64      `json:"until_ms,omitempty"`
	Lock       *LockView  `json:"lock"`
	Nodes      []NodeView `json:"nodes,omitempty"`
	StoreFence int64      `json:"store_fence"`
	Note       string     `json:"note"`
}

// Guard effects in a Result.
const (
	// EffectSaved: the guard acted and the run is safe.
	EffectSaved = "saved"
	// EffectContained: the guard acted but the run is still unsafe.
	EffectContained = "contained"
	// EffectWouldSave: the guard was off; the same run with it on is safe.
	EffectWouldSave = "would_have_saved"
	// EffectWouldContain: the guard was off; with it on there are fewer violations.
	EffectWouldContain = "would_have_contained"
	// EffectIdle: the guard made no difference in this run.
	EffectIdle = "idle"
)

// GuardReport says whether a guard was on and what it did in the run.
type GuardReport struct {
	Guard   string `json:"guard"`
	Enabled bool   `json:"enabled"`
	Effect  string `json:"effect"`
	Note    string `json:"note"`
}

// StoreReport is the write boundary after the run. Correct is false when a
// stale write was accepted.
type StoreReport struct {
	HighestFence  int64 `json:"highest_fence"`
	Accepted      int   `json:"accepted"`
	Rejected      int   `json:"rejected"`
	StaleAccepted int   `json:"stale_accepted"`
	Correct       bool  `json:"correct"`
	Effects       int   `json:"effects"`
}

// LeaseReport is the lease the scenario ran with, in ms (bound and budget 0
// when there are none).
type LeaseReport struct {
	LeaseMS      int64  `json:"lease_ms"`
	Renewable    bool   `json:"renewable"`
	RenewEveryMS int64  `json:"renew_every_ms"`
	BudgetMS     int64  `json:"budget_ms"`
	RenewBoundMS int64  `json:"renew_bound_ms"`
	MarginMS     int64  `json:"cancel_margin_ms"`
	Mode         string `json:"mode"`
}

// Result is one run of a scenario: the verdict, the violations in time
// order, what each guard did, the store, notes on the model's limits, and
// the timeline. Its JSON shape is documented in docs/simulate.md.
type Result struct {
	Scenario string `json:"scenario"`
	// Nodes is the number of Redlock nodes (absent with one server).
	Nodes       int           `json:"nodes,omitempty"`
	Verdict     string        `json:"verdict"`
	Violations  []Violation   `json:"violations"`
	Guards      []GuardReport `json:"guards"`
	Lease       LeaseReport   `json:"lease"`
	FenceSource string        `json:"fence_source"`
	Check       string        `json:"check"`
	Store       StoreReport   `json:"store"`
	Notes       []string      `json:"notes"`
	Events      []Event       `json:"events"`
	// Actors are the process names in order of first appearance.
	Actors []string `json:"actors"`
	// EndMS is the virtual time of the last event.
	EndMS int64 `json:"end_ms"`
	// Lanes are each actor's states over time, for swimlane diagrams.
	Lanes []history.Lane `json:"lanes"`
}
