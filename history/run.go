package history

// Server roles of a run, beside its actors: what a Step calls or a note is
// over. Roles are not names, so an actor called "lock" is still an actor.
const (
	ServerLock     = "lock"     // the lock's Redis server, or the Redlock nodes
	ServerStore    = "store"    // the write boundary
	ServerReceiver = "receiver" // the receiver of external effects
)

// Run is one run (simulated or trial) as the renderers draw it: swimlanes,
// a sequence diagram, JUnit, a report. simulate.Result.History and
// trial.Result.History build it; times are ms since the run's start.
type Run struct {
	// Title names the run ("failover", "trial of ./worker.sh (seed 7)").
	Title   string
	Verdict string
	EndMS   int64
	// Actors are the holders in order of first appearance; Servers the
	// servers drawn beside them, in order.
	Actors  []string
	Servers []Server
	// Nodes is the number of Redlock nodes (0 or 1: one server).
	Nodes int
	Lanes []Lane
	// Steps are what happened, in time order.
	Steps []Step
	// Violations are the broken invariants, in the order the run reports them.
	Violations []Violation
}

// Server is one server of a run: its role (ServerLock, ...) and the name
// it is shown by ("Redis", "Redlock, 5 nodes").
type Server struct {
	Role string
	Name string
}

// Step is one thing that happened at AtMS: a call of Actor to Server
// (both set) with the server's Reply, or a note over Actor (Server "") or
// over Server (Actor ""). Text says what, without the time.
type Step struct {
	AtMS   int64
	Actor  string
	Server string
	Text   string
	// Reply is the server's answer to a call ("" none); Refused says it
	// refused or failed.
	Reply   string
	Refused bool
	// Holder is the lock's holder after the step, as its row in a swimlane
	// shows it ("" free); Nodes each Redlock node's after it (nil with one
	// server).
	Holder string
	Nodes  []Node
	// Fault is the fault's kind when the step is one ("pause", "partition",
	// ...); Fence the fencing token of an acquisition or a write (0: none).
	Fault string
	Fence int64
}

// Node is one Redlock node after a step: its key's holder ("" none) and
// whether it is down.
type Node struct {
	Holder string
	Down   bool
}

// Violation is one broken invariant as drawn: its code, when, over whom
// (an actor, else a server role) and what.
type Violation struct {
	Code   string
	AtMS   int64
	Actor  string
	Server string
	Detail string
}
