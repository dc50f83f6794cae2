package fleet_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/fleet"
	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// recorder is a Sink keeping the events and the passes.
type recorder struct {
	events []inspect.Event
	passes []fleet.Pass
	locks  int
	held   map[string]time.Duration
}

func (r *recorder) Lock(l *inspect.Lock, held time.Duration) {
	r.locks++
	if r.held == nil {
		r.held = map[string]time.Duration{}
	}
	r.held[l.Key] = held
}
func (r *recorder) Event(e inspect.Event) error { r.events = append(r.events, e); return nil }
func (r *recorder) PassDone(p fleet.Pass)       { r.passes = append(r.passes, p) }

// take returns "EVENT key" lines of the events since the last take.
func (r *recorder) take() string {
	var out []string
	for _, e := range r.events {
		w := e.Event + " " + e.Key[strings.LastIndex(e.Key, ":")+1:]
		if e.Code != "" {
			w += " " + e.Code
		}
		out = append(out, w)
	}
	r.events = nil
	return strings.Join(out, "; ")
}

// TestPassEvents follows a pattern through the ownership changes a pass can
// see: held at the first pass, acquired, taken over, released, and a
// finding appearing and clearing.
func TestPassEvents(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	c := srv.Client(t)
	ctx := context.Background()
	k := func(s string) string { return redistest.Key(t, s) }
	c.Set(ctx, k("a"), "owner-1", time.Minute)
	c.Set(ctx, "other:"+k("b"), "x", time.Minute) // outside the pattern
	r := &inspect.Reader{Light: true, MaxValueBytes: inspect.ScanMaxValueBytes}
	f := fleet.New(r, c, fleet.Options{Pattern: redistest.Key(t, "*"), Count: 100})
	rec := &recorder{}
	pass := func() string {
		t.Helper()
		if err := f.Pass(ctx, rec); err != nil {
			t.Fatal(err)
		}
		return rec.take()
	}
	if got, want := pass(), "HELD a"; got != want {
		t.Fatalf("first pass: %q, want %q", got, want)
	}
	c.Set(ctx, k("b"), "owner-2", time.Minute)
	c.Set(ctx, k("a"), "owner-3", time.Minute)
	if got, want := pass(), "TAKEOVER a; ACQUIRED b"; !sameSet(got, want) {
		t.Fatalf("second pass: %q, want %q", got, want)
	}
	c.Persist(ctx, k("b"))
	c.Del(ctx, k("a"))
	if got, want := pass(), "RENEWED b; FINDING b NO_TTL; FINDING b NOT_A_LOCK; RELEASED a"; !sameSet(got, want) {
		t.Fatalf("third pass: %q, want %q", got, want)
	}
	c.Expire(ctx, k("b"), time.Minute)
	if got, want := pass(), "TTL_JUMP b; FINDING_CLEARED b NOT_A_LOCK; FINDING_CLEARED b NO_TTL"; got != want {
		t.Fatalf("fourth pass: %q, want %q", got, want)
	}
	if f.Tracked() != 1 || len(rec.passes) != 4 || rec.passes[3].Locks != 1 {
		t.Fatalf("tracked %d, passes %+v", f.Tracked(), rec.passes)
	}
	if rec.held[k("b")] <= 0 {
		t.Fatalf("b held %s after three passes, want more than 0", rec.held[k("b")])
	}
}

// TestPassCompanionStays: a Bull queue's "id" counter is its companion
// beside the queue's lists, and stays one when they empty out, so a pass
// makes no ownership event for it (issue 44); gone, it is forgotten.
func TestPassCompanionStays(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	c := srv.Client(t)
	ctx := context.Background()
	id, active := redistest.Key(t, "id"), redistest.Key(t, "active") // "t:<test>:id": bull 4 "<prefix>:<queue>:id"
	c.Set(ctx, id, "1", 0)
	c.LPush(ctx, active, "1")
	r := &inspect.Reader{Light: true, MaxValueBytes: inspect.ScanMaxValueBytes}
	f := fleet.New(r, c, fleet.Options{Pattern: redistest.Key(t, "*"), Count: 100})
	rec := &recorder{}
	for _, step := range []func(){func() {}, func() { c.Del(ctx, active) }, func() { c.Incr(ctx, id) }, func() { c.Del(ctx, id) }} {
		step()
		if err := f.Pass(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if got := rec.take(); got != "" || rec.locks != 0 {
			t.Fatalf("pass %d: events %q, %d locks; want none", len(rec.passes), got, rec.locks)
		}
	}
	c.Set(ctx, id, "1", 0)
	if err := f.Pass(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); got != "ACQUIRED id" {
		t.Fatalf("a lone counter, after the queue went: events %q, want ACQUIRED id", got)
	}
}

func sameSet(a, b string) bool {
	x, y := strings.Split(a, "; "), strings.Split(b, "; ")
	if len(x) != len(y) {
		return false
	}
	seen := map[string]int{}
	for _, s := range x {
		seen[s]++
	}
	for _, s := range y {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestPassPaced checks --scan-rate: a pass over 2000 keys at 10000 keys/s
// with COUNT 100 takes at least the 20 calls' due time, about 0.2s.
func TestPassPaced(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	pipe := c.Pipeline()
	for i := range 2000 {
		pipe.Set(ctx, "k"+string(rune('a'+i%26))+strings.Repeat("x", i%7)+":"+time.Duration(i).String(), "v", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	r := &inspect.Reader{Light: true}
	f := fleet.New(r, c, fleet.Options{Pattern: "lock:*", Count: 100, Rate: 10000})
	rec := &recorder{}
	start := time.Now()
	if err := f.Pass(ctx, rec); err != nil {
		t.Fatal(err)
	}
	// The last call is due at walked/rate; the walk is at least DBSIZE.
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("pass over 2000 keys at 10000/s took %s, want at least 150ms", d)
	}
	if rec.passes[0].Walked < 2000 {
		t.Fatalf("walked %d, want at least 2000", rec.passes[0].Walked)
	}
}

// TestPassCluster follows a pattern over every primary of a cluster: keys
// on three primaries' slots are all held, a pass paced by DBSIZE summed
// over them, and one deleted key is released.
func TestPassCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t)
	ctx := context.Background()
	primaries := map[string]bool{}
	for i := 0; len(primaries) < 3 || i < 9; i++ {
		k := "lock:" + strings.Repeat("k", i+1)
		if err := c.Set(ctx, k, "owner-"+k, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		n, err := c.MasterForKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		primaries[n.Options().Addr] = true
	}
	r := &inspect.Reader{Light: true, Options: inspect.Options{Cluster: true}}
	f := fleet.New(r, c, fleet.Options{Pattern: "lock:*", Interval: 100 * time.Millisecond})
	rec := &recorder{}
	if err := f.Pass(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got := f.Tracked(); got < 9 || strings.Count(rec.take(), "HELD") != got {
		t.Fatalf("tracked %d keys over %d primaries, want every key set, each HELD", got, len(primaries))
	}
	c.Del(ctx, "lock:k")
	if err := f.Pass(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); got != "RELEASED k" {
		t.Fatalf("second pass: %q, want RELEASED k", got)
	}
}
