//go:build linux

package cmd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/diagnose"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/lockctl/lockctl/trial/store"
	"github.com/redis/go-redis/v9"
)

func init() { testCommands["blockread"] = blockRead }

// blockRead is `blockread ADDR [KEY LEASE_MS]`: with KEY it first takes
// the lock KEY for LEASE_MS (lockcore, never renewed) on
// $LOCKCTL_REDIS_URL and prints "fence N"; then it connects to ADDR and
// blocks in read(2) on that socket, as a worker stuck in an external call
// that never answers. Its Redis connection stays open.
func blockRead() int {
	args := os.Args[1:]
	if len(args) == 3 {
		opt, err := redis.ParseURL(os.Getenv("LOCKCTL_REDIS_URL"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "blockread:", err)
			return 2
		}
		c := redis.NewClient(opt)
		ms, _ := strconv.Atoi(args[2])
		lk, err := lockcore.NewLocker(c).Acquire(context.Background(), lockcore.Keys{Lock: args[1], Fence: lockcore.FenceKeyFor(args[1])}, time.Duration(ms)*time.Millisecond)
		if err != nil {
			fmt.Fprintln(os.Stderr, "blockread:", err)
			return 1
		}
		fmt.Printf("fence %d\n", lk.Fence)
	}
	conn, err := net.Dial("tcp", args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "blockread:", err)
		return 1
	}
	f, err := conn.(*net.TCPConn).File() // a blocking descriptor: read(2) waits in the kernel
	if err != nil {
		fmt.Fprintln(os.Stderr, "blockread:", err)
		return 1
	}
	fmt.Println("blocked")
	var b [1]byte
	_, _ = syscall.Read(int(f.Fd()), b[:])
	return 0
}

// silentListener accepts connections and never answers; it returns its
// address and a channel that gets one value per connection accepted.
func silentListener(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 16)
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
			accepted <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return l.Addr().String(), accepted
}

// worker is a started blockread process.
type worker struct {
	cmd   *exec.Cmd
	fence int64
}

// startWorker starts blockread against url and waits until it is blocked
// reading from addr (and, with key, holds the lock with its fence).
func startWorker(t *testing.T, url, addr string, accepted <-chan struct{}, args ...string) *worker {
	t.Helper()
	c := exec.Command("blockread", append([]string{addr}, args...)...)
	c.Env = append(os.Environ(), "LOCKCTL_REDIS_URL="+url)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	w := &worker{cmd: c}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "fence "); ok {
			w.fence, _ = strconv.ParseInt(n, 10, 64)
		}
		if sc.Text() == "blocked" {
			break
		}
	}
	<-accepted
	waitRead(t, c.Process.Pid)
	return w
}

// waitRead waits until a thread of pid is in read(2) (the worker prints
// "blocked" just before it enters it).
func waitRead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, task := range tasks {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/syscall", pid, task.Name()))
			if nr, _, _ := strings.Cut(string(b), " "); nr == strconv.Itoa(syscall.SYS_READ) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pid %d never entered read(2)", pid)
}

// diagnoseJSON runs diagnose -o json in-process and decodes its report.
func diagnoseJSON(t *testing.T, want int, args ...string) diagnose.Report {
	t.Helper()
	code, out, errOut := run(t, append([]string{"diagnose", "-o", "json"}, args...)...)
	if code != want {
		t.Fatalf("diagnose %v: exit %d, want %d: %s%s", args, code, want, errOut, out)
	}
	var rep diagnose.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("diagnose %v: %v\n%s", args, err, out)
	}
	return rep
}

func processOf(rep diagnose.Report, pid int) *diagnose.Process {
	for i, p := range rep.OldHolder.Processes {
		if p.PID == pid {
			return &rep.OldHolder.Processes[i]
		}
	}
	return nil
}

// commandCalls reads the calls of each command from INFO commandstats.
func commandCalls(t *testing.T, c *redis.Client) map[string]int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if ok {
			out[name], _ = strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
		}
	}
	return out
}

// checkNoWrites fails t when a command whose calls changed between the two
// snapshots writes (COMMAND INFO flag "write") or runs a script.
func checkNoWrites(t *testing.T, c *redis.Client, before, after map[string]int64) {
	t.Helper()
	var changed []string
	for name, n := range after {
		if n == before[name] {
			continue
		}
		changed = append(changed, name)
		base := strings.SplitN(name, "|", 2)[0]
		if strings.HasPrefix(base, "eval") || strings.HasPrefix(base, "fcall") || base == "script" {
			t.Errorf("%s ran %d times: a script may write", name, n-before[name])
		}
		res, err := c.Do(context.Background(), "command", "info", base).Slice()
		if err != nil || len(res) == 0 || res[0] == nil {
			t.Fatalf("COMMAND INFO %s: %v %v", base, res, err)
		}
		for _, f := range res[0].([]any)[2].([]any) {
			if f == "write" {
				t.Errorf("%s is a write command, sent %d times", name, n-before[name])
			}
		}
	}
	if !slices.Contains(changed, "client|list") || !slices.Contains(changed, "pttl") {
		t.Fatalf("commands sent: %v; want CLIENT LIST and PTTL among them", changed)
	}
}

// TestDiagnoseStaleHolder: a worker takes a lock and blocks reading from a
// listener that never answers; its lease expires and another holder takes
// over with a higher fence; a scratch PostgreSQL database holds the
// boundary's fence. Each verdict, discovery without --pid, a SIGSTOPped
// holder, and not one write command sent.
func TestDiagnoseStaleHolder(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	admin := s.Client(t)
	ctx := context.Background()
	addr, accepted := silentListener(t)
	key := "lock:OrderId:order-stale"
	old := startWorker(t, s.URL(), addr, accepted, key, "300")
	for admin.Exists(ctx, key).Val() == 1 {
		time.Sleep(20 * time.Millisecond)
	}
	newer := startWorker(t, s.URL(), addr, accepted, key, "600000")
	if newer.fence <= old.fence {
		t.Fatalf("fences %d then %d: want a higher one", old.fence, newer.fence)
	}
	db, err := store.Open(ctx, pgURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Drop(context.Background()) })
	schema := fmt.Sprintf("CREATE TABLE payments (order_id TEXT, fence BIGINT);\nCREATE TABLE before_takeover (order_id TEXT, fence BIGINT);\nINSERT INTO payments VALUES ('order-stale', %d);\nINSERT INTO before_takeover VALUES ('order-stale', %d);", newer.fence, old.fence-1)
	if err := db.ApplySchema(ctx, schema); err != nil {
		t.Fatal(err)
	}
	callsBefore := commandCalls(t, admin)
	pid := strconv.Itoa(old.cmd.Process.Pid)
	base := []string{"order-stale", "--redis", s.URL(), "--pid", pid, "--fence", strconv.FormatInt(old.fence, 10)}

	refused := diagnoseJSON(t, 0, append(base, "--store", db.URL(), "--fence-query", "SELECT max(fence) FROM payments WHERE order_id = 'order-stale'")...)
	p := processOf(refused, old.cmd.Process.Pid)
	if p == nil || p.ExternalCall == nil || p.ExternalCall.Peer != addr || p.ExternalCall.How != "read" || p.State != "sleeping" {
		t.Fatalf("old holder: %+v; want sleeping, blocked reading from %s", p, addr)
	}
	b := refused.Boundary
	if b.Verdict != diagnose.Refused || b.Stale == nil || !*b.Stale || *b.StoreFence != newer.fence || *b.LeaseFence != newer.fence || b.Store != "postgres" {
		t.Errorf("boundary %+v; want refused, stale, store and lease at %d", b, newer.fence)
	}
	if want := fmt.Sprintf("the old holder (pid %s) is blocked reading from %s for ", pid, addr); !strings.HasPrefix(refused.Advice, want) ||
		!strings.HasSuffix(refused.Advice, fmt.Sprintf("it will be refused at the store (fence %d < %d)", old.fence, newer.fence)) {
		t.Errorf("advice %q; want it to start %q and end with the refusal", refused.Advice, want)
	}
	if refused.Lease.Fence == nil || *refused.Lease.Fence.Value != newer.fence || refused.Lease.Layout.Name != "lockctl" {
		t.Errorf("lease %+v; want inspect's lockctl lock with fence %d", refused.Lease, newer.fence)
	}

	// As a user that may not write at all, the same report.
	if err := admin.Do(ctx, "ACL", "SETUSER", "reader", "on", ">reader-pw", "~*", "+@all", "-@write").Err(); err != nil {
		t.Fatal(err)
	}
	readerURL := strings.Replace(s.URL(), "redis://", "redis://reader:reader-pw@", 1)
	noWrite := diagnoseJSON(t, 0, append([]string{"order-stale", "--redis", readerURL}, base[3:]...)...)
	if p := processOf(noWrite, old.cmd.Process.Pid); noWrite.Boundary.Stale == nil || !*noWrite.Boundary.Stale || p == nil || p.ExternalCall == nil || p.ExternalCall.Peer != addr {
		t.Errorf("as a user without @write: %+v %q", noWrite.Boundary, noWrite.Advice)
	}

	// A user refused CLIENT LIST still gets the processes, the lease and the verdict.
	if err := admin.Do(ctx, "ACL", "SETUSER", "noclient", "on", ">nc-pw", "~*", "+@all", "-@write", "-client").Err(); err != nil {
		t.Fatal(err)
	}
	ncURL := strings.Replace(s.URL(), "redis://", "redis://noclient:nc-pw@", 1)
	noClient := diagnoseJSON(t, 0, append([]string{"order-stale", "--redis", ncURL}, base[3:]...)...)
	if len(noClient.OldHolder.Notes) != 1 || !strings.Contains(noClient.OldHolder.Notes[0], "CLIENT LIST failed") || processOf(noClient, old.cmd.Process.Pid) == nil || noClient.Lease.Fence == nil {
		t.Errorf("refused CLIENT LIST: notes %q, %+v", noClient.OldHolder.Notes, noClient.OldHolder.Processes)
	}

	accepted1 := diagnoseJSON(t, 1, append(base, "--store", db.URL(), "--fence-query", "SELECT max(fence) FROM before_takeover")...)
	if accepted1.Boundary.Verdict != diagnose.Accepted || !strings.Contains(accepted1.Advice, "ACCEPTED") || !strings.HasSuffix(accepted1.Advice, "kill it or fence the write") {
		t.Errorf("accepted: %+v %q", accepted1.Boundary, accepted1.Advice)
	}
	unknown := diagnoseJSON(t, 0, base...)
	if unknown.Boundary.Verdict != diagnose.Unknown || !strings.Contains(unknown.Advice, "give --store URL and --fence-query SQL") {
		t.Errorf("unknown: %+v %q", unknown.Boundary, unknown.Advice)
	}
	diagnoseJSON(t, 1, append(base, "--fail-on", "unknown")...)

	// A lockctl run child whose lockctl is gone: no Redis connection, only its environment.
	orphan := exec.Command("blockread", addr)
	orphan.Env = append(os.Environ(), "LOCKCTL_KEY="+key, "LOCKCTL_FENCE="+strconv.FormatInt(old.fence, 10))
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = orphan.Process.Kill(); _ = orphan.Wait() })
	<-accepted
	waitRead(t, orphan.Process.Pid)
	found := diagnoseJSON(t, 0, "order-stale", "--redis", s.URL())
	if found.OldHolder.Found != "discovered" || processOf(found, old.cmd.Process.Pid) == nil || processOf(found, newer.cmd.Process.Pid) == nil {
		t.Fatalf("discovery found %s: %+v; want both workers", found.OldHolder.Found, found.OldHolder.Processes)
	}
	if o := processOf(found, orphan.Process.Pid); o == nil || o.Run == nil || *o.Run.Fence != old.fence || found.Boundary.FenceFrom != "environ" || *found.Boundary.PID != orphan.Process.Pid {
		t.Errorf("the orphaned run child: %+v, boundary %+v; want it found by LOCKCTL_KEY, its fence taken", o, found.Boundary)
	}
	matched := 0
	for _, c := range found.OldHolder.Clients {
		if c.PID != nil && (*c.PID == old.cmd.Process.Pid || *c.PID == newer.cmd.Process.Pid) {
			matched++
			if c.Cmd == "" || c.AgeS < 0 {
				t.Errorf("client %+v: want its last command and age", c)
			}
		}
	}
	if matched != 2 {
		t.Errorf("clients %+v: want both workers' connections matched to their PIDs", found.OldHolder.Clients)
	}

	if err := old.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = old.cmd.Process.Signal(syscall.SIGCONT) }()
	var stopped diagnose.Report
	for range 100 {
		if stopped = diagnoseJSON(t, 0, base...); processOf(stopped, old.cmd.Process.Pid).State == "stopped" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(stopped.Advice, fmt.Sprintf("(pid %s) is stopped", pid)) {
		t.Errorf("stopped holder: advice %q", stopped.Advice)
	}

	checkNoWrites(t, admin, callsBefore, commandCalls(t, admin))
}

// pgURL is the PostgreSQL server the store tests use.
func pgURL(t *testing.T) string {
	t.Helper()
	if u := os.Getenv("LOCKCTL_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// TestDiagnoseRunChild: a lockctl run child blocked in an external call;
// diagnose --pid of the run process alone finds the key and the fence in
// the child's environment, and that it holds the current lease.
func TestDiagnoseRunChild(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	addr, accepted := silentListener(t)
	p := startLockctl(t, s.URL(), "run", "order-child", "--budget", "1h", "--", "blockread", addr)
	<-accepted
	var rep diagnose.Report
	for range 200 {
		rep = diagnoseJSON(t, 0, "--redis", s.URL(), "--pid", strconv.Itoa(p.Process.Pid))
		if n := len(rep.OldHolder.Processes); n == 2 && rep.OldHolder.Processes[1].ExternalCall != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rep.Key != "lock:OrderId:order-child" || len(rep.OldHolder.Processes) != 2 {
		t.Fatalf("key %q, processes %+v; want the run child's key and both processes", rep.Key, rep.OldHolder.Processes)
	}
	child := rep.OldHolder.Processes[1]
	if child.Run == nil || child.Run.Fence == nil || child.PPID != p.Process.Pid || child.ExternalCall == nil || child.ExternalCall.Peer != addr {
		t.Fatalf("child %+v; want a run child blocked reading from %s", child, addr)
	}
	b := rep.Boundary
	if b.FenceFrom != "environ" || *b.Fence != *child.Run.Fence || b.Stale == nil || *b.Stale || *b.PID != child.PID {
		t.Errorf("boundary %+v; want the child's fence, not stale", b)
	}
	if want := fmt.Sprintf("the holder (pid %d) holds the current lease (fence %d): nothing is stale", child.PID, *b.Fence); rep.Advice != want {
		t.Errorf("advice %q, want %q", rep.Advice, want)
	}
	raw, _ := json.Marshal(rep)
	for _, secret := range []string{"LOCKCTL_OWNER", "LOCKCTL_REDIS_URL", "HOME="} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the report shows %s: only LOCKCTL_KEY and LOCKCTL_FENCE may be read", secret)
		}
	}
}

// TestDiagnoseBadInput: one line and exit 2 for each bad input, 3 when
// Redis or the store cannot be reached.
func TestDiagnoseBadInput(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	sqlite := t.TempDir() + "/shop.db"
	sdb, err := store.Open(context.Background(), "sqlite:"+sqlite)
	if err != nil {
		t.Fatal(err)
	}
	if err := sdb.ApplySchema(context.Background(), "CREATE TABLE payments (order_id TEXT, fence INTEGER);"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sdb.Drop(context.Background()) })
	url := s.URL()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"order-1", "--pid", strconv.Itoa(gone.Process.Pid)}, 2, fmt.Sprintf("pid %d: no such process", gone.Process.Pid)},
		{[]string{"order-1", "--fence", "x34"}, 2, `--fence "x34" is not a whole number`},
		{[]string{"order-1", "--pid", "abc"}, 2, `--pid`},
		{[]string{"order-1", "--store", "redis://127.0.0.1:1/0", "--fence-query", "SELECT 1"}, 2, `store scheme "redis" is not supported; accepted: postgres://`},
		{[]string{"order-1", "--store", "sqlite:" + sqlite, "--fence-query", "SELECT 1; SELECT 2"}, 2, "the fence query has 2 statements; give one, a SELECT"},
		{[]string{"order-1", "--store", "sqlite:" + sqlite, "--fence-query", "SELECT order_id, fence FROM payments"}, 2, "the fence query returns 2 columns (order_id, fence)"},
		{[]string{"order-1", "--store", "sqlite:" + sqlite, "--fence-query", "DELETE FROM payments"}, 2, "must only read"},
		{[]string{"order-1", "--store", "sqlite:" + sqlite}, 2, "--store and --fence-query go together"},
		{[]string{"order-1", "--old-value", "no-fence-here"}, 2, `--old-value "no-fence-here" carries no fence`},
		{[]string{"order-1", "--fail-on", "error"}, 2, `fail-on "error" is not accepted; accepted: unknown`},
		{[]string{}, 2, "give a VALUE (e.g. order-demo-001), --key KEY, or --pid"},
		{[]string{"--pid", strconv.Itoa(os.Getpid())}, 2, "no lock key: give a VALUE, --key KEY, or --pid of a lockctl run child"},
		{[]string{"order-1", "--store", "postgres://app:s3cret@127.0.0.1:1/shop?connect_timeout=2", "--fence-query", "SELECT 1"}, 3, "store postgres://app:xxxxx@127.0.0.1:1/shop"},
	} {
		code, out, errOut := run(t, append([]string{"diagnose", "--redis", url}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) || out != "" || strings.Contains(errOut, "s3cret") || strings.Contains(errOut, "goroutine") {
			t.Errorf("diagnose %v: exit %d, stderr %q, stdout %q; want exit %d saying %q", c.args, code, errOut, out, c.code, c.want)
		}
	}
	code, _, errOut := run(t, "diagnose", "order-1", "--redis", "redis://127.0.0.1:1/0")
	if code != 3 || !strings.Contains(errOut, "redis redis://127.0.0.1:1/0") {
		t.Errorf("unreachable Redis: exit %d, %q; want 3", code, errOut)
	}
	// With a fence and a store but nothing in it: accepted, exit 1.
	rep := diagnoseJSON(t, 1, "order-1", "--redis", url, "--fence", "7", "--store", "sqlite:"+sqlite, "--fence-query", "SELECT max(fence) FROM payments")
	if rep.Boundary.Verdict != diagnose.Accepted || rep.Boundary.StoreFence != nil || rep.Boundary.Stale == nil || !*rep.Boundary.Stale {
		t.Errorf("empty store, no lease: %+v; want accepted and stale", rep.Boundary)
	}
}
