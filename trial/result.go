package trial

import "github.com/lockctl/lockctl/simulate"

// Violation codes a trial reports: simulate's, so a trial reads like a
// simulation, plus INVARIANT_VIOLATED for a --check query's rows.
const (
	CodeStaleWrite     = simulate.CodeStaleWrite
	CodeDuplicate      = simulate.CodeDuplicate
	CodeFenceBackwards = simulate.CodeFenceBackwards
	// CodeInvariant: the user's --check query returned rows (e.g. a
	// balance that differs from its ledger: a lost update).
	CodeInvariant = "INVARIANT_VIOLATED"
)

// Verdicts, as simulate's.
const (
	VerdictSafe   = simulate.VerdictSafe
	VerdictUnsafe = simulate.VerdictUnsafe
)

// Sources of a violation.
const (
	SourceClient = "client" // the workers' JSON lines on stdout
	SourceStore  = "store"  // the scratch database (--history, --check)
	SourceLock   = "lock"   // the lock timeline sampled from Redis
)

// Violation is one broken invariant found in a trial. AtMS is ms since the
// trial started (0 when the store judged it after the end); Worker is 1..N,
// 0 when unknown (a database row names no worker).
type Violation struct {
	Code     string     `json:"code"`
	At       string     `json:"at,omitempty"`
	AtMS     int64      `json:"at_ms"`
	Worker   int        `json:"worker"`
	Source   string     `json:"source"`
	Resource string     `json:"resource,omitempty"`
	Fence    *int64     `json:"fence,omitempty"`
	Key      *string    `json:"key,omitempty"`
	Detail   string     `json:"detail"`
	Rows     [][]string `json:"rows,omitempty"`
}

// Fault kinds (--nemesis).
const (
	FaultPause     = "pause"
	FaultKill      = "kill"
	FaultPartition = "partition"
	FaultExpire    = "expire"
	FaultRestart   = "restart"
)

// FaultKinds lists every nemesis in the order the docs give them.
var FaultKinds = []string{FaultPause, FaultKill, FaultPartition, FaultExpire, FaultRestart}

// Fault is one injected fault: when (ms since start), for how long (0 for
// kill, expire and restart), on which worker (0: Redis itself), which lock
// key (expire; pause of the holder), and why that target.
type Fault struct {
	Kind       string `json:"kind"`
	At         string `json:"at"`
	AtMS       int64  `json:"at_ms"`
	DurationMS int64  `json:"duration_ms"`
	Worker     int    `json:"worker"`
	Key        string `json:"key,omitempty"`
	Note       string `json:"note"`
}

// Event is one line of the lock timeline: a watch event of a key matching
// --lock-pattern (ACQUIRED, EXPIRED, TAKEOVER, ...), with the worker whose
// connection wrote the owner token (0: not seen).
type Event struct {
	At     string `json:"at"`
	AtMS   int64  `json:"at_ms"`
	Key    string `json:"key"`
	Event  string `json:"event"`
	Worker int    `json:"worker"`
	Fence  *int64 `json:"fence,omitempty"`
	PTTLMS int64  `json:"pttl_ms"`
	Detail string `json:"detail"`
}

// WorkerReport is what one worker slot did: how often it was started and
// failed, how many client-history operations it printed, and the last
// lines of its stderr (for a worker that keeps failing).
type WorkerReport struct {
	Worker int `json:"worker"`
	Starts int `json:"starts"`
	// Failures counts exits with a status other than 0 and failed starts
	// (a signal is the nemesis' kill or the stop); Exits are the first 20
	// ends as "exit status 1", "signal: killed", ...
	Failures int      `json:"failures"`
	Exits    []string `json:"exits"`
	Ops      int      `json:"ops"`
	LastErrs []string `json:"stderr_tail,omitempty"`
}

// StoreReport is the scratch database of a run: its scheme (postgres,
// mysql, sqlite), its name (the SQLite file's path), whether it was kept
// (--keep), and which queries judged it.
type StoreReport struct {
	Scheme  string `json:"scheme"`
	Name    string `json:"name"`
	Kept    bool   `json:"kept"`
	History bool   `json:"history"`
	Check   bool   `json:"check"`
}

// RunSummary is one run of a --runs series.
type RunSummary struct {
	Seed       uint64 `json:"seed"`
	Verdict    string `json:"verdict"`
	Violations int    `json:"violations"`
	DurationMS int64  `json:"duration_ms"`
}

// Result is one trial: the verdict, the violations in time order, the
// faults injected, the lock timeline and each worker's lanes. Its JSON shape
// is documented in docs/trial.md.
type Result struct {
	Verdict    string         `json:"verdict"`
	Seed       uint64         `json:"seed"`
	Workers    int            `json:"workers"`
	DurationMS int64          `json:"duration_ms"`
	Command    []string       `json:"command"`
	Nemeses    []string       `json:"nemeses"`
	Redis      string         `json:"redis"`
	Violations []Violation    `json:"violations"`
	Faults     []Fault        `json:"faults"`
	Events     []Event        `json:"events"`
	Ops        int            `json:"ops"`
	Reports    []WorkerReport `json:"worker_reports"`
	// Lanes are each worker's states over time, in simulate's shape (ms
	// since the start), for the swimlane renderer.
	Lanes []simulate.Lane `json:"lanes"`
	// Store names the scratch database the run was judged in (--store).
	Store *StoreReport `json:"store,omitempty"`
	// Interrupted says Ctrl-C ended the trial early: a partial verdict.
	Interrupted bool `json:"interrupted,omitempty"`
	// Runs and CounterexampleSeed are set by a --runs series.
	Runs               []RunSummary `json:"runs,omitempty"`
	CounterexampleSeed *uint64      `json:"counterexample_seed,omitempty"`
	Notes              []string     `json:"notes"`
}
