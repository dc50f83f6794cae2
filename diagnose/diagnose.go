package diagnose

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"time"

	"github.com/lockctl/lockctl/inspect"
)

// ErrNoProcess marks a --pid that names no process; ErrNoKey a diagnosis
// with no lock key (no VALUE, no --key, no lockctl run child naming one).
// Both are the user's input. Test with errors.Is.
var (
	ErrNoProcess = errors.New("no such process")
	ErrNoKey     = errors.New("no lock key")
)

// maxClients bounds the CLIENT LIST entries a report lists.
const maxClients = 100

// Options are the inputs of Run. Lease and Clients are required.
type Options struct {
	// Key is the lock key; "" takes LOCKCTL_KEY of a lockctl run child
	// among the processes read.
	Key string
	// PIDs are the processes to read (--pid); none: discover them.
	PIDs []int
	// Fence is the old holder's token given by the user (--fence), nil if not.
	Fence *int64
	// OldValueFence is the fence of the value the old holder wrote
	// (--old-value, FenceOfValue), nil if not given.
	OldValueFence *int64
	// Lease reads the lock key as inspect does.
	Lease func(ctx context.Context, key string) (inspect.Lock, error)
	// Clients returns CLIENT LIST's reply and the CLIENT ID of the
	// connection it came on (lockctl's own, left out of the report).
	Clients func(ctx context.Context) (list string, self int64, err error)
	// NewestFence runs the --fence-query on the --store (nil: no store);
	// Store names its scheme.
	NewestFence func(ctx context.Context) (*int64, error)
	Store       string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// CheckPIDs returns an error wrapping ErrNoProcess for the first PID that
// names no process; nil where /proc cannot be read (nothing can be checked).
func CheckPIDs(pids []int) error {
	if procNote != "" {
		return nil
	}
	for _, pid := range pids {
		if pid <= 0 {
			return fmt.Errorf("pid %d: %w; give the PID of a running process", pid, ErrNoProcess)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return fmt.Errorf("pid %d: %w; give the PID of a running process (ps, pgrep)", pid, ErrNoProcess)
		}
	}
	return nil
}

// FenceOfValue returns the fence a lock value carries (lockctl's and the
// seed platform's "<fence>:<owner>", as inspect reads it), or nil.
func FenceOfValue(key string, value []byte) *int64 {
	l := inspect.Analyze(key, inspect.Value{Type: "string", PTTL: -1, Bytes: value, Size: int64(len(value))}, nil, inspect.Options{})
	if l.Fence == nil {
		return nil
	}
	return l.Fence.Value
}

// Run follows the procedure: the old holder, the current lease, the write
// boundary, and one line of advice. It returns errors wrapping ErrNoProcess
// or ErrNoKey for bad input, and Lease's and NewestFence's errors as they
// are; a Clients error is a note in the report.
func Run(ctx context.Context, opts Options) (Report, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	rep := Report{OldHolder: OldHolder{Processes: []Process{}}}
	oh := &rep.OldHolder
	clients := redisSide(ctx, opts, oh)
	if err := readProcesses(opts, oh, clients, newProcReader(now())); err != nil {
		return rep, err
	}
	rep.Key = opts.Key
	if rep.Key == "" {
		for _, p := range oh.Processes {
			if p.Run != nil && p.Run.Key != "" {
				rep.Key = p.Run.Key
				break
			}
		}
	}
	if rep.Key == "" {
		return rep, fmt.Errorf("%w: give a VALUE, --key KEY, or --pid of a lockctl run child (its LOCKCTL_KEY names the lock)", ErrNoKey)
	}
	var err error
	if rep.Lease, err = opts.Lease(ctx, rep.Key); err != nil {
		return rep, err
	}
	rep.Boundary = boundary(opts, &rep)
	if opts.NewestFence != nil {
		if err := judge(ctx, opts, &rep.Boundary); err != nil {
			return rep, err
		}
	}
	rep.Advice = advice(&rep)
	return rep, nil
}

// redisSide reads CLIENT LIST without lockctl's own connection (a
// failure is a note); the servers' addresses are the laddr of every entry.
func redisSide(ctx context.Context, opts Options, oh *OldHolder) []Client {
	list, self, err := opts.Clients(ctx)
	if err != nil {
		// An ACL user without CLIENT LIST still gets steps 2 and 3.
		oh.Notes = append(oh.Notes, fmt.Sprintf("CLIENT LIST failed (%v): the Redis side is not shown, and without --pid no process can be found", err))
		return nil
	}
	var out []Client
	for _, c := range parseClientList(list) {
		if c.ID != self {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].AgeS > out[j].AgeS })
	return out
}

// readProcesses fills oh with the processes of --pid, or those discovered
// holding a connection to the server, and each one's lockctl run children.
func readProcesses(opts Options, oh *OldHolder, clients []Client, pr *procReader) error {
	if procNote != "" {
		oh.Found = "none"
		oh.Notes = append(oh.Notes, procNote)
		oh.Clients = capClients(clients)
		return nil
	}
	servers := map[netip.AddrPort]bool{}
	for _, c := range clients {
		if ap, ok := parseAddrPort(c.LAddr); ok {
			servers[ap] = true
		}
	}
	owners, hidden := socketOwners()
	pidOf := func(c Client) (int, bool) {
		a, ok1 := parseAddrPort(c.Addr)
		l, ok2 := parseAddrPort(c.LAddr)
		if !ok1 || !ok2 {
			return 0, false
		}
		pid, ok := owners[[2]netip.AddrPort{a, l}]
		return pid, ok
	}
	// lockctl's other pooled connections are left out with its own.
	others := clients[:0:0]
	for _, c := range clients {
		if pid, ok := pidOf(c); !ok || pid != os.Getpid() {
			others = append(others, c)
		}
	}
	clients = others
	wanted := opts.PIDs
	oh.Found = "pid"
	if len(wanted) == 0 {
		oh.Found = "discovered"
		for _, c := range clients {
			if pid, ok := pidOf(c); ok {
				wanted = append(wanted, pid)
			}
		}
		for _, pid := range runChildrenFor(opts.Key) {
			if opts.Key != "" && pid != os.Getpid() {
				wanted = append(wanted, pid)
			}
		}
	}
	seen := map[int]bool{}
	// add reads pid (a child only when it is a lockctl run child), then
	// its children; a process that ended meanwhile is an error only when
	// the user named it.
	var add func(pid int, given, child bool) error
	add = func(pid int, given, child bool) error {
		if seen[pid] {
			return nil
		}
		p, err := pr.process(pid)
		switch {
		case err != nil && (given || !errors.Is(err, ErrNoProcess)):
			return err
		case err != nil, child && p.Run == nil:
			return nil
		}
		seen[pid] = true
		markRedis(&p, servers)
		p.ExternalCall = externalCall(&p)
		oh.Processes = append(oh.Processes, p)
		for _, c := range childrenOf(pid) {
			if err := add(c, false, true); err != nil {
				return err
			}
		}
		return nil
	}
	for _, pid := range wanted {
		if err := add(pid, oh.Found == "pid", false); err != nil {
			return err
		}
	}
	var shown []Client
	for _, c := range clients {
		if pid, ok := pidOf(c); ok && seen[pid] {
			c.PID = &pid
		}
		if oh.Found == "discovered" || c.PID != nil {
			shown = append(shown, c)
		}
	}
	oh.Clients = capClients(shown)
	if len(oh.Processes) == 0 {
		oh.Found = "none"
	}
	if oh.Found == "discovered" {
		notes(oh, clients, hidden)
	}
	return nil
}

// notes say what discovery could not see.
func notes(oh *OldHolder, clients []Client, hidden int) {
	remote := 0
	for _, c := range oh.Clients {
		if c.PID == nil {
			remote++
		}
	}
	if remote > 0 {
		oh.Notes = append(oh.Notes, fmt.Sprintf("%d of %d Redis connections match no process on this host: another host's (only the Redis side can be seen there; run diagnose on that host)%s", remote, len(clients), hiddenText(hidden)))
	}
	for _, c := range clients {
		if c.LAddr == "" {
			oh.Notes = append(oh.Notes, "the server's CLIENT LIST has no laddr (Redis before 6.2): connections cannot be matched with local sockets")
			break
		}
	}
}

func hiddenText(hidden int) string {
	if hidden == 0 {
		return ""
	}
	return fmt.Sprintf(", or of the %d processes whose descriptors lockctl may not read (another user's; run as root to see them)", hidden)
}

func capClients(cs []Client) []Client {
	if len(cs) > maxClients {
		return cs[:maxClients]
	}
	return cs
}

// markRedis flags the connections whose peer is a server address.
func markRedis(p *Process, servers map[netip.AddrPort]bool) {
	for i, c := range p.Connections {
		if ap, err := netip.ParseAddrPort(c.Peer); err == nil && servers[ap] {
			p.Connections[i].Redis = true
		}
	}
}

// externalCall finds the connection a process is blocked on: a thread in a
// call on that socket's descriptor, else, when its threads only wait (poll,
// epoll, futex, sleep), the one established TCP connection not to Redis.
func externalCall(p *Process) *ExternalCall {
	byFD := map[int]Conn{}
	for _, c := range p.Connections {
		byFD[c.FD] = c
	}
	for _, t := range p.Threads {
		if t.FD == nil {
			continue
		}
		if c, ok := byFD[*t.FD]; ok {
			return &ExternalCall{Conn: c, How: fdFirst[t.Syscall], TID: t.TID, OffCPUMS: t.OffCPUMS}
		}
	}
	var only []Conn
	for _, c := range p.Connections {
		if c.State == "ESTABLISHED" && !c.Redis {
			only = append(only, c)
		}
	}
	if len(only) != 1 {
		return nil
	}
	var off *int64
	for _, t := range p.Threads {
		if t.State == "running" || !waits[t.Syscall] {
			return nil
		}
		if t.OffCPUMS != nil && (off == nil || *t.OffCPUMS < *off) {
			off = t.OffCPUMS
		}
	}
	return &ExternalCall{Conn: only[0], How: "only_connection", OffCPUMS: off}
}
