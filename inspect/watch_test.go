package inspect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func held(ms int64, owner string, pttl int64) inspect.Sample {
	return inspect.Sample{At: at(ms), Key: "k", Exists: true, Owner: owner, PTTLMS: pttl}
}

func gone(ms int64) inspect.Sample { return inspect.Sample{At: at(ms), Key: "k", PTTLMS: -2} }

func fenced(s inspect.Sample, f int64) inspect.Sample { s.Fence = &f; return s }

// replied sets when the reply to s arrived (ms), later than it was sent.
func replied(s inspect.Sample, ms int64) inspect.Sample { s.Done = at(ms); return s }

// expiring sets the server's absolute expiry (PEXPIRETIME) to ms.
func expiring(s inspect.Sample, ms int64) inspect.Sample { s.ExpireAtMS = at(ms).UnixMilli(); return s }

func kinds(evs []inspect.Event) string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Event
	}
	return strings.Join(out, " ")
}

// TestDerive feeds synthetic sample sequences to the pure differ.
func TestDerive(t *testing.T) {
	cases := []struct {
		name    string
		samples []inspect.Sample
		opts    inspect.WatchOptions
		want    string
	}{
		{"free then acquired", []inspect.Sample{gone(0), gone(100), held(200, "A", 30000)}, inspect.WatchOptions{}, "FREE ACQUIRED"},
		{"held, ticking down", []inspect.Sample{held(0, "A", 30000), held(100, "A", 29900), held(200, "A", 29800)}, inspect.WatchOptions{}, "HELD"},
		{"renewed", []inspect.Sample{held(0, "A", 30000), held(5000, "A", 25000), held(5100, "A", 30000)}, inspect.WatchOptions{}, "HELD RENEWED"},
		{"released early", []inspect.Sample{held(0, "A", 30000), gone(100)}, inspect.WatchOptions{}, "HELD RELEASED"},
		{"expired at its TTL", []inspect.Sample{held(0, "A", 150), held(100, "A", 50), gone(200)}, inspect.WatchOptions{}, "HELD EXPIRED"},
		{"no-TTL key deleted", []inspect.Sample{held(0, "A", -1), gone(100)}, inspect.WatchOptions{}, "HELD RELEASED"},
		{"takeover with no gap", []inspect.Sample{held(0, "A", 30000), held(100, "B", 30000)}, inspect.WatchOptions{}, "HELD TAKEOVER"},
		{"ttl jump", []inspect.Sample{held(0, "A", 30000), held(100, "A", 10000)}, inspect.WatchOptions{}, "HELD TTL_JUMP"},
		// The reply to the read sent at 100 came at 1200 (CLIENT PAUSE): the
		// server may have read the TTL at 1100, so neither the drop nor the
		// next read's TTL is a jump or a renewal.
		{"slow reply is not a jump", []inspect.Sample{held(0, "A", 30000), replied(held(100, "A", 28900), 1200), replied(held(1300, "A", 28700), 1310)}, inspect.WatchOptions{}, "HELD"},
		{"a jump beyond a slow reply", []inspect.Sample{held(0, "A", 30000), replied(held(100, "A", 20000), 1200)}, inspect.WatchOptions{}, "HELD TTL_JUMP"},
		{"a renewal beyond a slow reply", []inspect.Sample{held(0, "A", 30000), replied(held(100, "A", 28900), 1200), replied(held(1300, "A", 30000), 1310)}, inspect.WatchOptions{}, "HELD RENEWED"},
		{"expired during a slow reply", []inspect.Sample{held(0, "A", 500), replied(gone(100), 700)}, inspect.WatchOptions{}, "HELD EXPIRED"},
		// With PEXPIRETIME on both sides a moved expiry is exact: a cut of
		// 700ms that a 1.1s reply delay hides from the TTL alone is seen,
		// and so is a renewal smaller than the jitter tolerance.
		{"slow reply hides a cut from the TTL", []inspect.Sample{held(0, "A", 30000), replied(held(100, "A", 29200), 1200)}, inspect.WatchOptions{}, "HELD"},
		{"a cut beyond a slow reply, by expiry", []inspect.Sample{expiring(held(0, "A", 30000), 30000), expiring(replied(held(100, "A", 29200), 1200), 29300)}, inspect.WatchOptions{}, "HELD TTL_JUMP"},
		{"a small renewal, by expiry", []inspect.Sample{expiring(held(0, "A", 30000), 30000), expiring(held(10, "A", 30010), 30020)}, inspect.WatchOptions{}, "HELD RENEWED"},
		// Same expiry: no PEXPIRE reached the key. A TTL that rose is the
		// server's clock stepping back, not a renewal; one that fell faster
		// than time passed is its clock stepping forward.
		{"same expiry, TTL up: no renewal", []inspect.Sample{expiring(held(0, "A", 30000), 30000), expiring(held(1000, "A", 31000), 30000)}, inspect.WatchOptions{}, "HELD"},
		{"same expiry, TTL down: clock jump", []inspect.Sample{expiring(held(0, "A", 30000), 30000), expiring(held(100, "A", 10000), 30000)}, inspect.WatchOptions{}, "HELD TTL_JUMP"},
		// PERSIST is a renewal for ever; an expiry where there was none a
		// cut from infinity. A list that replaces a hash (no owner token in
		// either) is a takeover.
		{"persist", []inspect.Sample{held(0, "A", 30000), held(100, "A", -1)}, inspect.WatchOptions{}, "HELD RENEWED"},
		{"expiry set", []inspect.Sample{held(0, "A", -1), held(100, "A", 30000)}, inspect.WatchOptions{}, "HELD TTL_JUMP"},
		{"no expiry on either side", []inspect.Sample{held(0, "A", -1), held(100, "A", -1)}, inspect.WatchOptions{}, "HELD"},
		{"type changed", []inspect.Sample{{At: at(0), Key: "k", Exists: true, Type: "hash", PTTLMS: -1}, {At: at(100), Key: "k", Exists: true, Type: "list", PTTLMS: -1}}, inspect.WatchOptions{}, "HELD TAKEOVER"},
		// A Bull queue's "id" counter is its companion beside the queue's
		// lists; when they empty out it stays one until it goes.
		{"a companion stays one while it exists", []inspect.Sample{
			{At: at(0), Key: "k", Exists: true, Type: "string", PTTLMS: -1, Role: inspect.RoleJobQueue},
			{At: at(100), Key: "k", Exists: true, Type: "string", PTTLMS: -1},
			gone(200), {At: at(300), Key: "k", Exists: true, Type: "string", PTTLMS: -1},
		}, inspect.WatchOptions{}, "COMPANION COMPANION_GONE ACQUIRED"},
		{"jitter is not a jump", []inspect.Sample{held(0, "A", 30000), held(100, "A", 29870)}, inspect.WatchOptions{}, "HELD"},
		{"fence backwards", []inspect.Sample{fenced(held(0, "A", 30000), 18), gone(100), fenced(held(200, "B", 30000), 17)}, inspect.WatchOptions{}, "HELD RELEASED FENCE_BACKWARDS ACQUIRED"},
		// shared/cases.md 5: a Redisson watchdog renews 30000 → 25000 → 28000
		// after the owning thread ended; past the bound it is flagged once.
		{"case 5 renewed past bound", []inspect.Sample{
			held(0, "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1", 30000),
			held(5000, "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1", 25000),
			held(7000, "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1", 28000),
			held(17000, "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1", 30000),
			held(27000, "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1", 30000),
		}, inspect.WatchOptions{RenewBound: 15 * time.Second}, "HELD RENEWED RENEWED RENEWED_PAST_BOUND RENEWED"},
		{"new owner resets the bound", []inspect.Sample{
			held(0, "A", 30000), held(20000, "A", 30000), gone(20100), held(20200, "B", 30000), held(21000, "B", 30000),
		}, inspect.WatchOptions{RenewBound: 15 * time.Second}, "HELD RENEWED RENEWED_PAST_BOUND RELEASED ACQUIRED RENEWED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs := inspect.Derive(tc.samples, tc.opts)
			if got := kinds(evs); got != tc.want {
				t.Errorf("events = %q, want %q", got, tc.want)
			}
			for _, e := range evs {
				if e.Message == "" || e.Key != "k" || e.At == "" {
					t.Errorf("incomplete event %+v", e)
				}
			}
		})
	}
}

func TestDeriveEventFields(t *testing.T) {
	evs := inspect.Derive([]inspect.Sample{held(0, "A", 30000), held(100, "B", 20000)}, inspect.WatchOptions{})
	e := evs[1]
	if e.Owner != "B" || e.PreviousOwner != "A" || *e.PreviousPTTLMS != 30000 || e.ElapsedMS != 100 || e.PTTLMS != 20000 {
		t.Errorf("takeover event %+v", e)
	}
	binKey := held(0, "\xff\x00", 100)
	binKey.Key = "k\xff"
	bin := inspect.Derive([]inspect.Sample{binKey}, inspect.WatchOptions{})
	if bin[0].Owner != "hex:ff00" || bin[0].KeyHex != "6bff" {
		t.Errorf("binary owner shown as %q, key_hex %q", bin[0].Owner, bin[0].KeyHex)
	}
	if evs[1].KeyHex != "" {
		t.Errorf("UTF-8 key has key_hex %q", evs[1].KeyHex)
	}
	// A key that is not a lock string: its type is named, and PTTL -1 is
	// no expiry, not "no TTL left".
	hash := inspect.Sample{At: at(0), Key: "k", Exists: true, Type: "hash", PTTLMS: -1}
	if m := inspect.Derive([]inspect.Sample{hash, gone(100)}, inspect.WatchOptions{}); m[0].Message != "held by a hash with no owner token, no expiry" ||
		m[1].Message != "released by a hash with no owner token (it had no expiry)" {
		t.Errorf("hash messages %q, %q", m[0].Message, m[1].Message)
	}
}

// TestWatchRealRedis samples a real key while it is acquired, renewed,
// taken over and released.
func TestWatchRealRedis(t *testing.T) {
	c := client(t)
	k := "t:" + redistest.Name(t)
	r := &inspect.Reader{}
	d := inspect.NewDiffer(inspect.WatchOptions{})
	var evs []inspect.Event
	sample := func() {
		now := time.Now()
		locks, err := r.Read(ctx, c, []string{k})
		must(t, err)
		evs = append(evs, d.Next(inspect.SampleOf(locks[0], now))...)
	}
	sample()
	must(t, c.Set(ctx, k, "1:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 2*time.Second).Err())
	sample()
	time.Sleep(50 * time.Millisecond)
	must(t, c.PExpire(ctx, k, 3*time.Second).Err())
	sample()
	must(t, c.Set(ctx, k, "2:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 3*time.Second).Err())
	sample()
	must(t, c.Del(ctx, k).Err())
	sample()
	if got := kinds(evs); got != "FREE ACQUIRED RENEWED TAKEOVER RELEASED" {
		t.Errorf("events = %q", got)
	}
}

// TestWatchCutDuringPause: a read and a TTL cut both wait out a CLIENT
// PAUSE, so one sample's reply comes 1s late. Whichever of the two the
// server runs first, the cut (1s off a 30s TTL) is one TTL_JUMP, found from
// PEXPIRETIME; from the TTL alone the late reply's wide window would hide it
// when the read runs first.
func TestWatchCutDuringPause(t *testing.T) {
	srv := redistest.Start(t)
	c, admin := srv.Client(t), srv.Client(t)
	cutter := srv.Client(t)
	k := "t:" + redistest.Name(t)
	r := &inspect.Reader{}
	d := inspect.NewDiffer(inspect.WatchOptions{})
	var evs []inspect.Event
	sample := func() {
		sent := time.Now()
		locks, err := r.Read(ctx, c, []string{k})
		must(t, err)
		s := inspect.SampleOf(locks[0], sent)
		s.Done = time.Now()
		if s.ExpireAtMS == 0 {
			t.Fatalf("no PEXPIRETIME in the sample %+v", s)
		}
		evs = append(evs, d.Next(s)...)
	}
	must(t, c.Set(ctx, k, "1:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 30*time.Second).Err())
	sample()
	must(t, admin.Do(ctx, "CLIENT", "PAUSE", "1000", "ALL").Err())
	cut := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond) // after the read below is queued
		cut <- cutter.PExpire(ctx, k, 28*time.Second).Err()
	}()
	sample() // sent at once, answered after the pause
	must(t, <-cut)
	sample()
	if got := kinds(evs); got != "HELD TTL_JUMP" {
		t.Errorf("events = %q, want HELD TTL_JUMP", got)
	}
}

// A companion key (a signal list that appears after a release, a fence
// counter raised by each acquire) is no holder: COMPANION when it appears,
// COMPANION_GONE when it goes, never ACQUIRED or RELEASED (issue 27 item 5).
func TestWatchCompanion(t *testing.T) {
	c := client(t)
	k := "lock-signal:" + redistest.Name(t)
	r := &inspect.Reader{}
	d := inspect.NewDiffer(inspect.WatchOptions{})
	var kinds []string
	sample := func() {
		locks, err := r.Read(ctx, c, []string{k})
		must(t, err)
		for _, e := range d.Next(inspect.SampleOf(locks[0], time.Now())) {
			kinds = append(kinds, e.Event)
		}
	}
	sample()
	must(t, c.RPush(ctx, k, 1).Err())
	sample()
	must(t, c.RPush(ctx, k, 2).Err())
	sample()
	must(t, c.Del(ctx, k).Err())
	sample()
	fence := "{lock:" + redistest.Name(t) + "}:fence"
	d = inspect.NewDiffer(inspect.WatchOptions{})
	k = fence
	must(t, c.Incr(ctx, fence).Err())
	sample()
	must(t, c.Incr(ctx, fence).Err())
	sample()
	if got := strings.Join(kinds, " "); got != "FREE COMPANION COMPANION_GONE COMPANION" {
		t.Errorf("events %q, want FREE COMPANION COMPANION_GONE COMPANION", got)
	}
}
