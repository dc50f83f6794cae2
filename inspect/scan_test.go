package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
)

func TestScan(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	pipe := c.Pipeline()
	for i := range 2000 {
		pipe.Set(ctx, fmt.Sprintf("data:%d", i), "x", 0)
	}
	for i := range 300 {
		pipe.Set(ctx, fmt.Sprintf("lock:%04d", i), lockcore.FormatValue(1, lockcore.NewOwnerToken()), time.Duration(10+i)*time.Second)
	}
	pipe.Set(ctx, "lock:forever", "1", 0)
	_, err := pipe.Exec(ctx)
	must(t, err)

	r := &inspect.Reader{}
	var locks []inspect.Lock
	var walked int64
	err = r.Scan(ctx, c, inspect.ScanOptions{Pattern: "lock:*", Count: 100, Progress: func(n int64) { walked = n }}, func(l inspect.Lock) error {
		locks = append(locks, l)
		return nil
	})
	must(t, err)
	if len(locks) != 301 || walked == 0 {
		t.Fatalf("scanned %d locks (walked %d), want 301", len(locks), walked)
	}
	inspect.SortByTTL(locks)
	if locks[0].Key != "lock:0000" || locks[299].Key != "lock:0299" || locks[300].Key != "lock:forever" {
		t.Errorf("order: %s %s %s", locks[0].Key, locks[299].Key, locks[300].Key)
	}
	rep := inspect.NewReport(locks)
	if rep.Summary.ByLayout["lockctl"] != 300 || rep.Summary.ByFinding["NO_FENCE"] != 300 || rep.Summary.ByFinding["NO_TTL"] != 1 {
		t.Errorf("summary %+v", rep.Summary)
	}

	var n int
	must(t, r.Scan(ctx, c, inspect.ScanOptions{Pattern: "lock:*", Count: 50, Limit: 7}, func(inspect.Lock) error { n++; return nil }))
	if n != 7 {
		t.Errorf("limit 7 gave %d", n)
	}

	// A cancelled scan (Ctrl-C) stops with what it read and says so.
	cctx, cancel := context.WithCancel(ctx)
	n = 0
	err = r.Scan(cctx, c, inspect.ScanOptions{Pattern: "*", Count: 10}, func(inspect.Lock) error {
		n++
		if n == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || n < 5 || n >= 2301 {
		t.Errorf("cancelled scan: err %v after %d locks", err, n)
	}
}

func TestGlobEscape(t *testing.T) {
	c := client(t)
	weird := "t:" + redistest.Name(t) + ":a*b?c[d]e\\f"
	must(t, c.Set(ctx, weird, "v", time.Minute).Err())
	must(t, c.Set(ctx, "t:"+redistest.Name(t)+":aXbYc[d]e\\f", "v", time.Minute).Err())
	var got []string
	r := &inspect.Reader{}
	own := inspect.GlobEscape("t:" + redistest.Name(t) + ":") // not a past run's keys (-count=2)
	must(t, r.Scan(ctx, c, inspect.ScanOptions{Pattern: own + "*" + inspect.GlobEscape("a*b?c[d]e\\f") + "*"}, func(l inspect.Lock) error {
		got = append(got, l.Key)
		return nil
	}))
	if len(got) != 1 || got[0] != weird {
		t.Errorf("literal match found %q", got)
	}
	// Bytes that are not UTF-8 are matched as they are, not as U+FFFD.
	binary := "t:" + redistest.Name(t) + ":x\xffy:z"
	must(t, c.Set(ctx, binary, "v", time.Minute).Err())
	got = nil
	must(t, r.Scan(ctx, c, inspect.ScanOptions{Pattern: own + "*" + inspect.GlobEscape("x\xffy") + "*"}, func(l inspect.Lock) error {
		got = append(got, l.Key)
		return nil
	}))
	if len(got) != 1 || got[0] != binary {
		t.Errorf("non-UTF-8 value matched %q", got)
	}
}

// TestLightRead: a scan's reads infer TYPE from GETRANGE and still tell
// strings, hashes, lists and missing keys apart.
func TestLightRead(t *testing.T) {
	c := client(t)
	p := "t:" + redistest.Name(t) + ":"
	must(t, c.Set(ctx, p+"s", lockcore.FormatValue(1, lockcore.NewOwnerToken()), time.Minute).Err())
	must(t, c.Set(ctx, p+"empty", "", time.Minute).Err())
	must(t, c.HIncrBy(ctx, p+"h", "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1", 1).Err())
	must(t, c.RPush(ctx, p+"l", "x").Err())
	keys := []string{p + "s", p + "empty", p + "h", p + "l", p + "missing"}
	for _, light := range []bool{false, true} {
		locks, err := (&inspect.Reader{Light: light}).Read(ctx, c, keys)
		must(t, err)
		var got []string
		for _, l := range locks {
			got = append(got, l.Type+"/"+l.Layout.Name)
		}
		if want := "string/lockctl string/unknown hash/redisson list/unknown none/unknown"; strings.Join(got, " ") != want {
			t.Errorf("light %v: %s, want %s", light, strings.Join(got, " "), want)
		}
	}
}

// TestReadRefused: a read the server refuses (NOPERM for a command or a key
// the ACL denies) is an error naming the command and the key, for the lock
// and for its companion keys, in a scan's light reads too. Taken for an
// empty reply, it showed a held lock as ABSENT or as CONSTANT_OWNER "".
func TestReadRefused(t *testing.T) {
	s := redistest.Shared(t)
	admin := s.Client(t)
	p := "t:" + redistest.Name(t) + ":"
	lock := p + "lock"
	must(t, admin.Set(ctx, lock, lockcore.FormatValue(3, lockcore.NewOwnerToken()), time.Minute).Err())
	must(t, admin.Set(ctx, lockcore.FenceKeyFor(lock), 3, 0).Err())
	must(t, admin.HIncrBy(ctx, p+"hash", "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1", 1).Err())
	for _, tc := range []struct {
		user string
		acl  []any
		key  string
		want string
	}{
		{"notype", []any{"~*", "+@read", "+@connection", "-type"}, lock, `TYPE "` + lock + `": NOPERM`},
		{"nogetrange", []any{"~*", "+@read", "+@connection", "-getrange"}, lock, `GETRANGE "` + lock + `": NOPERM`},
		{"nohscan", []any{"~*", "+@read", "+@connection", "-hscan"}, p + "hash", `HSCAN "` + p + `hash": NOPERM`},
		{"nofencekey", []any{"~" + lock, "+@read", "+@connection"}, lock, `TYPE "` + lockcore.FenceKeyFor(lock) + `": NOPERM`},
		{"nokey", []any{"~" + p + "other", "+@read", "+@connection"}, lock, `TYPE "` + lock + `": NOPERM`},
	} {
		user := redistest.Name(t) + "-" + tc.user
		must(t, admin.Do(ctx, append([]any{"acl", "setuser", user, "reset", "on", ">pw"}, tc.acl...)...).Err())
		t.Cleanup(func() { admin.Do(ctx, "acl", "deluser", user) })
		c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: user, Password: "pw"})
		for _, light := range []bool{false, true} {
			locks, err := (&inspect.Reader{Light: light}).Read(ctx, c, []string{tc.key})
			var re *inspect.ReadError
			want := tc.want
			if light {
				want = `": NOPERM` // a scan's reads send other commands first
			}
			if err == nil || !errors.As(err, &re) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s, light %v: err %v, want %q (read %+v)", tc.user, light, err, want, locks)
			}
		}
		_ = c.Close()
	}
	// An ACL scoped to the lock keys refuses the companions probed for a
	// layout (redisson_lock_token:{...}): they count as not there. Only a
	// lockctl fence counter is needed (the "nofencekey" case above).
	scoped := redistest.Name(t) + "-scoped"
	must(t, admin.Do(ctx, "acl", "setuser", scoped, "reset", "on", ">pw", "~"+p+"*", "+@read", "+@connection").Err())
	t.Cleanup(func() { admin.Do(ctx, "acl", "deluser", scoped) })
	sc := redis.NewClient(&redis.Options{Addr: s.Addr, Username: scoped, Password: "pw"})
	defer sc.Close()
	if h := readOne(t, sc, p+"hash", inspect.Options{}); h.Type != "hash" || h.Owner == "" {
		t.Errorf("a hash whose companions the ACL refuses: %+v", h)
	}
	// NOPERM on PEXPIRETIME and OBJECT only leaves the expiry estimated
	// and the idle time out.
	user := redistest.Name(t) + "-nopexpiretime"
	must(t, admin.Do(ctx, "acl", "setuser", user, "reset", "on", ">pw", "~*", "+@read", "+@connection", "-pexpiretime", "-object").Err())
	t.Cleanup(func() { admin.Do(ctx, "acl", "deluser", user) })
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: user, Password: "pw"})
	defer c.Close()
	l := readOne(t, c, lock, inspect.Options{})
	if l.Layout.Name != "lockctl" || l.Layout.Confidence != inspect.Certain || l.ExpiresAt == nil || l.IdleSeconds != nil || codes(l) != "" {
		t.Errorf("without PEXPIRETIME and OBJECT: %+v", l)
	}
}

// vanishHook deletes key (through admin) just before the reader's second
// round trip (the size of a hash, list, set or zset) is sent: the key
// expires between the two.
type vanishHook struct {
	admin *redis.Client
	key   string
	done  bool
}

func (h *vanishHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *vanishHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *vanishHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		switch cmds[0].Name() {
		case "hlen", "llen", "scard", "zcard":
			if !h.done {
				h.done = true
				_ = h.admin.Del(ctx, h.key).Err()
			}
		}
		return next(ctx, cmds)
	}
}

// TestVanishedBetweenReads: a hash, list, set or zset that expires between
// the first round trip (TYPE, PTTL) and the second (its size and items) is
// absent, and a scan skips it. It was read as an existing key with no
// fields: a Redisson lock became WRONG_TYPE ("a hash whose fields no lock
// library writes"), thousands of times in a scan of short leases, and
// watch saw an owner-less hash take it over.
func TestVanishedBetweenReads(t *testing.T) {
	s := redistest.Shared(t)
	admin := s.Client(t)
	p := "t:" + redistest.Name(t) + ":"
	for _, typ := range []string{"hash", "list", "set", "zset"} {
		k := p + typ
		for _, light := range []bool{false, true} {
			switch typ {
			case "hash":
				must(t, admin.HIncrBy(ctx, k, "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1", 1).Err())
			case "list":
				must(t, admin.RPush(ctx, k, "x").Err())
			case "set":
				must(t, admin.SAdd(ctx, k, "x").Err())
			case "zset":
				must(t, admin.ZAdd(ctx, k, redis.Z{Score: 1, Member: "x"}).Err())
			}
			c := redis.NewClient(&redis.Options{Addr: s.Addr})
			c.AddHook(&vanishHook{admin: admin, key: k})
			locks, err := (&inspect.Reader{Light: light}).Read(ctx, c, []string{k})
			_ = c.Close()
			must(t, err)
			if l := locks[0]; l.Exists || l.Type != "none" || codes(l) != "ABSENT:info" {
				t.Errorf("%s, light %v: exists %v, type %s, findings %s", typ, light, l.Exists, l.Type, codes(l))
			}
		}
	}
}
