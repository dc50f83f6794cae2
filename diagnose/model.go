// Package diagnose follows the procedure for an old task found still
// running after its lock expired, read-only, in its order: what call the old
// execution is stuck in (its processes and threads, from /proc on Linux;
// the Redis side of its connection, from CLIENT LIST), who holds the
// current lease (inspect's reading and judging), and whether the old
// execution's next write would be refused at the store (its fence against
// the newest the store accepted). Nothing here prints, reads flags or exits.
package diagnose

import "github.com/lockctl/lockctl/inspect"

// Verdicts of the write boundary: would the old holder's next conditional
// write with its fence change anything?
const (
	// Refused: the store has accepted a newer fence than the old holder's.
	Refused = "refused"
	// Accepted: the store has nothing newer; the old holder's write would land.
	Accepted = "accepted"
	// Unknown: no fence or no boundary was given (Boundary.Missing says which).
	Unknown = "unknown"
)

// Report is the stable JSON shape of `lockctl diagnose -o json`
// (docs/output.md), in the procedure's order.
type Report struct {
	// Key is the lock key diagnosed.
	Key string `json:"key"`
	// OldHolder is step 1: the processes and their Redis connections.
	OldHolder OldHolder `json:"old_holder"`
	// Lease is step 2: the lock as `lockctl inspect -o json` shows it
	// (one element of its "locks").
	Lease inspect.Lock `json:"lease"`
	// Boundary is step 3: the old holder's fence against the store's.
	Boundary Boundary `json:"boundary"`
	// Advice is one line saying what was found and what to do.
	Advice string `json:"advice"`
}

// OldHolder is what can be seen of the old execution.
type OldHolder struct {
	// Found is how the processes were named: "pid" (--pid), "discovered"
	// (local sockets matched with CLIENT LIST, and the processes whose
	// LOCKCTL_KEY is the key), or "none".
	Found string `json:"found"`
	// Processes are the processes read, with each lockctl run child of
	// theirs that carries LOCKCTL_KEY; empty when /proc cannot be read.
	Processes []Process `json:"processes"`
	// Clients is the Redis side: every CLIENT LIST entry but lockctl's own,
	// oldest first, each with the local PID that holds it when one does
	// (only without --pid).
	Clients []Client `json:"clients,omitempty"`
	// Notes say what could not be seen and why (another host, no /proc,
	// permissions), one sentence each.
	Notes []string `json:"notes,omitempty"`
}

// Process is one local process, read from /proc/PID.
type Process struct {
	PID  int `json:"pid"`
	PPID int `json:"ppid"`
	// Comm is the executable's name (/proc/PID/comm); the command line is
	// never read: it may carry a password.
	Comm string `json:"comm"`
	// State is running, sleeping, disk_wait, stopped, tracing_stop,
	// zombie, idle or dead (/proc/PID/stat).
	State string `json:"state"`
	// AgeMS is how long it has been alive, in ms; StartedAt the same as
	// RFC 3339 (UTC, ms).
	AgeMS     int64    `json:"age_ms"`
	StartedAt string   `json:"started_at"`
	Threads   []Thread `json:"threads"`
	// Connections are its TCP sockets (/proc/PID/net/tcp and tcp6 matched
	// with the socket inodes of /proc/PID/fd).
	Connections []Conn `json:"connections"`
	// ExternalCall is the connection it waits on, when one can be told
	// (ExternalCall.How), else nil.
	ExternalCall *ExternalCall `json:"external_call"`
	// Run is set for a `lockctl run` child: LOCKCTL_KEY and LOCKCTL_FENCE
	// from its environment, the only variables ever read.
	Run *RunChild `json:"lockctl_run"`
	// Unreadable names the /proc files that could not be read
	// ("syscall: permission denied").
	Unreadable []string `json:"unreadable,omitempty"`
}

// Thread is one thread of a process (/proc/PID/task/TID).
type Thread struct {
	TID   int    `json:"tid"`
	Comm  string `json:"comm"`
	State string `json:"state"`
	// WChan is the kernel function it sleeps in ("" when running or hidden).
	WChan string `json:"wchan"`
	// Syscall is the call it is in: its name ("read", or "syscall 232"
	// when unnamed), "running", or "" when not in one or unreadable.
	Syscall string `json:"syscall"`
	// FD is the file descriptor the call works on, for calls that take one
	// first (read, recvfrom, write, connect, ...).
	FD *int `json:"fd,omitempty"`
	// OffCPUMS is how long ago, in ms, it last ran on a CPU
	// (/proc/PID/task/TID/sched se.exec_start against lockctl's own); nil
	// when the kernel does not say.
	OffCPUMS *int64 `json:"off_cpu_ms,omitempty"`
}

// Conn is one TCP socket of a process.
type Conn struct {
	FD    int    `json:"fd"`
	Local string `json:"local"`
	Peer  string `json:"peer"`
	// State is the TCP state: ESTABLISHED, LISTEN, CLOSE_WAIT, ...
	State string `json:"state"`
	// SendQueue and RecvQueue are bytes not yet acknowledged by the peer
	// and not yet read by the process (tx_queue, rx_queue).
	SendQueue int64 `json:"send_queue"`
	RecvQueue int64 `json:"recv_queue"`
	// Redis says the peer is the Redis server diagnosed.
	Redis bool `json:"redis"`
}

// ExternalCall is the connection a process is blocked on.
type ExternalCall struct {
	Conn
	// How it was told: "read" (a thread is in read(2), recvfrom(2), ... on
	// its fd), "write", "connect", or "only_connection" (threads wait in
	// poll, epoll or futex and this is the one established connection that
	// is not to Redis: likely, not certain).
	How string `json:"how"`
	// TID is the thread in the call (0 for only_connection).
	TID int `json:"tid,omitempty"`
	// OffCPUMS is that thread's Thread.OffCPUMS: how long it has waited.
	OffCPUMS *int64 `json:"off_cpu_ms,omitempty"`
}

// RunChild is what `lockctl run` gave its child.
type RunChild struct {
	Key string `json:"key"`
	// Fence is LOCKCTL_FENCE, nil when absent or not an integer.
	Fence *int64 `json:"fence"`
}

// Client is one CLIENT LIST entry: the Redis side of a connection.
type Client struct {
	ID int64 `json:"id"`
	// Addr is the client's address as the server sees it; LAddr the
	// server's own end (Redis 6.2+, else "").
	Addr  string `json:"addr"`
	LAddr string `json:"laddr,omitempty"`
	Name  string `json:"name"`
	// AgeS and IdleS are the connection's age and idle time, in seconds.
	AgeS  int64 `json:"age_s"`
	IdleS int64 `json:"idle_s"`
	// Cmd is the last command the server ran for it.
	Cmd string `json:"cmd"`
	// LibName and LibVer are what the client library reported (CLIENT
	// SETINFO, Redis 7.2+), "" otherwise.
	LibName string `json:"lib_name,omitempty"`
	LibVer  string `json:"lib_ver,omitempty"`
	// PID is the local process holding this connection, nil when none on
	// this host does (another host, or a process lockctl may not read).
	PID *int `json:"pid"`
}

// Boundary is step 3: the old holder's fence against the store's newest.
type Boundary struct {
	Verdict string `json:"verdict"`
	// Fence is the old holder's token, and FenceFrom where it came from:
	// "flag" (--fence), "old_value" (the value the old holder wrote),
	// "environ" (LOCKCTL_FENCE of a lockctl run child), or "".
	Fence     *int64 `json:"fence"`
	FenceFrom string `json:"fence_from,omitempty"`
	// PID is the process the fence belongs to, when known.
	PID *int `json:"pid,omitempty"`
	// LeaseFence is the current lease's fence (its value, else its
	// counter), nil when it has none or there is no lease.
	LeaseFence *int64 `json:"lease_fence"`
	// Stale is true when the old holder no longer holds the lease (no
	// lease, or a newer fence), false when it is the current holder, nil
	// when it cannot be told.
	Stale *bool `json:"stale"`
	// Store is the --store scheme ("postgres", "mysql", "sqlite"), "" without.
	Store string `json:"store,omitempty"`
	// StoreFence is the newest fence the store accepted (the --fence-query's
	// result), nil when it has none or no store was given.
	StoreFence *int64 `json:"store_fence"`
	// Missing names what to give for a verdict other than unknown.
	Missing []string `json:"missing,omitempty"`
	// Reason is one sentence saying why the verdict is what it is.
	Reason string `json:"reason"`
}
