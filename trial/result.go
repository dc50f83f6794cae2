package trial

import "github.com/lockctl/lockctl/history"

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
	// Linearization is Porcupine's proof of a CodeNotLinearizable
	// violation, for -o html (nil for every other code).
	Linearization *Linearization `json:"-"`
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
	// DroppedOps are operations printed after the history was full (a
	// trial keeps 100000); BadLines stdout lines that start with "{" but
	// are no operation (invalid JSON, an unknown op), passed over.
	DroppedOps int      `json:"dropped_ops"`
	BadLines   int      `json:"bad_lines"`
	LastErrs   []string `json:"stderr_tail,omitempty"`
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
	Verdict    string   `json:"verdict"`
	Seed       uint64   `json:"seed"`
	Workers    int      `json:"workers"`
	DurationMS int64    `json:"duration_ms"`
	Command    []string `json:"command"`
	Nemeses    []string `json:"nemeses"`
	Redis      string   `json:"redis"`
	// Containment says how each worker's process tree was held (paused,
	// killed, ended): cgroup, subreaper or process-group (docs/trial.md).
	Containment string         `json:"containment"`
	Violations  []Violation    `json:"violations"`
	Faults      []Fault        `json:"faults"`
	Events      []Event        `json:"events"`
	Ops         int            `json:"ops"`
	Reports     []WorkerReport `json:"worker_reports"`
	// Lanes are each worker's states over time (ms since the start), for
	// the swimlane renderer.
	Lanes []history.Lane `json:"lanes"`
	// Linearizable is the Porcupine check of the registers the client
	// history reads (ok, violated, unknown; omitted when none).
	Linearizable string `json:"linearizable,omitempty"`
	// Store names the scratch database the run was judged in (--store).
	Store *StoreReport `json:"store,omitempty"`
	// Interrupted says Ctrl-C ended the trial early: a partial verdict.
	Interrupted bool `json:"interrupted,omitempty"`
	// Partial says Redis refused the lock timeline's samples (SCAN denied):
	// the verdict does not cover lock events or history.CodeFenceBackwards; a note
	// says how many and why.
	Partial bool `json:"partial,omitempty"`
	// Runs and CounterexampleSeed are set by a --runs series.
	Runs               []RunSummary `json:"runs,omitempty"`
	CounterexampleSeed *uint64      `json:"counterexample_seed,omitempty"`
	Notes              []string     `json:"notes"`
}
