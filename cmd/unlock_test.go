package cmd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/golden"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// unlockFixture is one unlock invocation against a real server, with
// buffers for its streams.
type unlockFixture struct {
	opts     *UnlockOptions
	out, err bytes.Buffer
}

func newUnlock(t *testing.T, srv *redistest.Server, format, key string) *unlockFixture {
	fx := &unlockFixture{}
	fx.opts = &UnlockOptions{
		IO:      &IOStreams{In: strings.NewReader(""), Out: &fx.out, ErrOut: &fx.err},
		Printer: &Printer{Format: format, Out: &fx.out, Styles: newStyles(&fx.out, false)},
		Redis: func(context.Context) (*RedisConn, error) {
			c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}})
			return &RedisConn{Client: c, URL: srv.URL(), Timeout: time.Second}, nil
		},
		Key: key,
	}
	return fx
}

func exitCodeOf(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

const testOwner = "5f0c2b6f3e1a4d7c9b8a6e5d4c3b2a19"

func TestUnlockOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	rdb.Set(ctx, "lock:OrderId:order-demo-001", "41:"+testOwner, 0)
	rdb.Set(ctx, "{lock:OrderId:order-demo-001}:fence", "41", 0)

	wrong := newUnlock(t, srv, formatTable, "lock:OrderId:order-demo-001")
	wrong.opts.Owner = "0000000000000000000000000000dead"
	if code := exitCodeOf(unlockRun(ctx, wrong.opts)); code != ExitCheckFailed {
		t.Fatalf("wrong token: exit %d", code)
	}
	if v := rdb.Get(ctx, "lock:OrderId:order-demo-001").Val(); v != "41:"+testOwner {
		t.Fatalf("a wrong token changed the lock to %q", v)
	}
	golden.Assert(t, wrong.out.Bytes(), "_wrong")

	right := newUnlock(t, srv, formatJSON, "lock:OrderId:order-demo-001")
	right.opts.Owner = testOwner
	if err := unlockRun(ctx, right.opts); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, right.out.Bytes(), "_right.json")
	if rdb.Exists(ctx, "lock:OrderId:order-demo-001").Val() != 0 {
		t.Error("lock not deleted")
	}
	if f := rdb.Get(ctx, "{lock:OrderId:order-demo-001}:fence").Val(); f != "41" {
		t.Errorf("fence counter touched: %q", f)
	}

	again := newUnlock(t, srv, formatTable, "lock:OrderId:order-demo-001")
	again.opts.Owner = testOwner
	if code := exitCodeOf(unlockRun(ctx, again.opts)); code != ExitCheckFailed || !strings.Contains(again.out.String(), "does not exist") {
		t.Errorf("absent lock: exit %d, %s", code, again.out.String())
	}
}

// cases.md 8: a lock holding 32 hex characters is compared as raw bytes:
// the same characters are OWNED; the same token in another case is not.
func TestUnlockRawBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	rdb.Set(ctx, "lock:x", testOwner, 0)

	upper := newUnlock(t, srv, formatJSON, "lock:x")
	upper.opts.Owner = strings.ToUpper(testOwner)
	if code := exitCodeOf(unlockRun(ctx, upper.opts)); code != ExitCheckFailed || rdb.Exists(ctx, "lock:x").Val() != 1 {
		t.Fatalf("upper-case token: exit %d", code)
	}
	same := newUnlock(t, srv, formatJSON, "lock:x")
	same.opts.Owner = testOwner
	if err := unlockRun(ctx, same.opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(same.out.String(), `"verdict": "owned"`) || rdb.Exists(ctx, "lock:x").Val() != 0 {
		t.Errorf("32-hex value not OWNED: %s", same.out.String())
	}
	// A key or value that is not UTF-8 shows as U+FFFD in JSON; key_hex and
	// value_hex name it.
	rdb.Set(ctx, "lock:\xff", "7:\xfe", 0)
	bin := newUnlock(t, srv, formatJSON, "lock:\xff")
	bin.opts.Owner = "\xfe"
	if err := unlockRun(ctx, bin.opts); err != nil {
		t.Fatal(err)
	}
	if out := bin.out.String(); !strings.Contains(out, `"key_hex": "6c6f636b3aff"`) || !strings.Contains(out, `"value_hex": "373afe"`) || rdb.Exists(ctx, "lock:\xff").Val() != 0 {
		t.Errorf("non-UTF-8 key and value: %s", out)
	}
}

func TestUnlockForce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	key := "lock:OrderId:order-demo-002"
	rdb.Set(ctx, key, "7:"+testOwner, 0)

	// Not a terminal and no --yes: refused before touching Redis.
	pipe := newUnlock(t, srv, formatTable, key)
	pipe.opts.Force = true
	if code := exitCodeOf(unlockRun(ctx, pipe.opts)); code != ExitUsage {
		t.Fatalf("--force from a pipe: exit %d", code)
	}

	no := newUnlock(t, srv, formatTable, key)
	no.opts.Force, no.opts.InTTY, no.opts.IO.In = true, true, strings.NewReader("n\n")
	if code := exitCodeOf(unlockRun(ctx, no.opts)); code != ExitCheckFailed || rdb.Exists(ctx, key).Val() != 1 {
		t.Fatalf("declined: exit %d", code)
	}
	if want := "Delete lock:OrderId:order-demo-002 (owner " + testOwner + ", fence 7, PTTL none (no expiry))?"; !strings.Contains(no.err.String(), want) {
		t.Errorf("prompt %q lacks %q", no.err.String(), want)
	}

	yes := newUnlock(t, srv, formatTable, key)
	yes.opts.Force, yes.opts.InTTY, yes.opts.IO.In = true, true, strings.NewReader("yes\n")
	if err := unlockRun(ctx, yes.opts); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, yes.out.Bytes(), "")
	if rdb.Exists(ctx, key).Val() != 0 {
		t.Error("not deleted")
	}

	// --yes: no prompt; a Redisson hash is deleted as a whole.
	rdb.HSet(ctx, key, "uuid:1", "1")
	flag := newUnlock(t, srv, formatYAML, key)
	flag.opts.Force, flag.opts.Yes = true, true
	if err := unlockRun(ctx, flag.opts); err != nil || rdb.Exists(ctx, key).Val() != 0 {
		t.Fatalf("--yes on a hash: %v", err)
	}
	if flag.err.Len() != 0 || !strings.Contains(flag.out.String(), "type: hash\n") {
		t.Errorf("stdout %q stderr %q", flag.out.String(), flag.err.String())
	}
}

// promptReader runs act when the prompt first reads its answer: what
// another client does while the user looks at the prompt.
type promptReader struct {
	act  func()
	once sync.Once
	r    io.Reader
}

func (p *promptReader) Read(b []byte) (int, error) {
	p.once.Do(p.act)
	return p.r.Read(b)
}

// --force on a key that is not a string deletes only what the prompt showed
// (its owner too): a new holder's lock, or a hash that changed, in between
// is kept, verdict changed.
func TestUnlockForceOtherTypeChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	key := "lock:OrderId:order-demo-004"
	const field = "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1" // Redisson: <client uuid>:<thread id>
	for name, change := range map[string]func(){
		"new holder": func() {
			rdb.Del(ctx, key)
			rdb.Set(ctx, key, "8:"+testOwner, time.Minute)
		},
		"hash changed": func() { rdb.HIncrBy(ctx, key, field, 1) },
	} {
		t.Run(name, func(t *testing.T) {
			rdb.Del(ctx, key)
			rdb.HSet(ctx, key, field, 1)
			u := newUnlock(t, srv, formatTable, key)
			u.opts.Force, u.opts.InTTY = true, true
			u.opts.IO.In = &promptReader{act: change, r: strings.NewReader("y\n")}
			if code := exitCodeOf(unlockRun(ctx, u.opts)); code != ExitCheckFailed || rdb.Exists(ctx, key).Val() != 1 {
				t.Fatalf("exit %d, key exists %d; stdout %s", code, rdb.Exists(ctx, key).Val(), u.out.String())
			}
			if !strings.Contains(u.out.String(), "changed between the read and the delete") {
				t.Errorf("stdout %q", u.out.String())
			}
			if want := "(a Redis hash, owner " + field + ", PTTL none (no expiry))?"; !strings.Contains(u.err.String(), want) {
				t.Errorf("prompt %q lacks %q", u.err.String(), want)
			}
		})
	}
}

// --owner on a key that is not a string reads no DUMP (only --force needs
// it): a user whose ACL denies DUMP gets not_owner, exit 1, not exit 3.
func TestUnlockOwnerOtherTypeNoDump(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	key := "lock:OrderId:order-demo-005"
	rdb.HSet(ctx, key, "8743c9c0-0795-4907-87fd-6c719a6b4586:1", 1)
	u := newUnlock(t, srv, formatTable, key)
	u.opts.Owner = "x"
	u.opts.Redis = aclUser(t, srv, "nodump", "~*", "+@all", "-dump")
	if code := exitCodeOf(unlockRun(ctx, u.opts)); code != ExitCheckFailed || !strings.Contains(u.out.String(), "not_owner") {
		t.Errorf("exit %d, stdout %q", code, u.out.String())
	}
}

// An ACL scoped to the lock keys (~lock:*) covers none of the keys inspect
// probes beside a hash for its layout (redisson_lock_token:{...}): unlock
// needs only the hash's owner, so --force and --owner still work (they
// exited 3, "TYPE \"redisson_lock_token:{lock:...}\": NOPERM").
func TestUnlockOtherTypeLockScopedACL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	key := "lock:OrderId:order-demo-006"
	const field = "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1"
	connect := aclUser(t, srv, "locksonly", "~lock:*", "+@all")
	rdb.HSet(ctx, key, field, 1)
	u := newUnlock(t, srv, formatTable, key)
	u.opts.Owner, u.opts.Redis = "x", connect
	if code := exitCodeOf(unlockRun(ctx, u.opts)); code != ExitCheckFailed || !strings.Contains(u.out.String(), "not_owner") || !strings.Contains(u.out.String(), field) {
		t.Errorf("--owner: exit %d, stdout %q", code, u.out.String())
	}
	u = newUnlock(t, srv, formatTable, key)
	u.opts.Force, u.opts.Yes, u.opts.Redis = true, true, connect
	if code := exitCodeOf(unlockRun(ctx, u.opts)); code != ExitOK || rdb.Exists(ctx, key).Val() != 0 {
		t.Errorf("--force: exit %d, key exists %d, stdout %q", code, rdb.Exists(ctx, key).Val(), u.out.String())
	}
}

// aclUser creates the ACL user name with rules on srv and returns a
// connection as that user, for UnlockOptions.Redis.
func aclUser(t *testing.T, srv *redistest.Server, name string, rules ...any) func(context.Context) (*RedisConn, error) {
	t.Helper()
	if err := srv.Client(t).Do(context.Background(), append([]any{"ACL", "SETUSER", name, "on", ">" + name + "-pw"}, rules...)...).Err(); err != nil {
		t.Fatal(err)
	}
	return func(context.Context) (*RedisConn, error) {
		c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, Username: name, Password: name + "-pw"})
		return &RedisConn{Client: c, URL: srv.URL(), Timeout: time.Second}, nil
	}
}

// Ctrl-C at the --force prompt cancels (exit 130 through execute), deleting
// nothing; it is not read as a declined answer.
func TestUnlockForceInterruptedAtPrompt(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	key := "lock:OrderId:order-demo-003"
	rdb.Set(context.Background(), key, "7:"+testOwner, 0)

	u := newUnlock(t, srv, formatTable, key)
	stdin, w := io.Pipe() // a terminal nobody types into
	defer w.Close()
	u.opts.Force, u.opts.InTTY, u.opts.IO.In = true, true, stdin
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel) // Ctrl-C while the prompt waits
	err := unlockRun(ctx, u.opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted prompt: %v, want context.Canceled", err)
	}
	if rdb.Exists(context.Background(), key).Val() != 1 {
		t.Error("the key was deleted")
	}
}

// A value of 8 MB is read as its size and first unlockValueBytes bytes:
// the output stays under 10 KB, and the owner check stays exact (the tail
// differs by one byte: nothing deleted; the right token deletes it).
func TestUnlockHugeValue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	owner := strings.Repeat("o", 8<<20)
	rdb.Set(ctx, "lock:x", "7:"+owner, 0)
	check := func(token string, force bool, wantCode int, wantKey int64, want ...string) {
		t.Helper()
		u := newUnlock(t, srv, formatJSON, "lock:x")
		u.opts.Owner, u.opts.Force, u.opts.Yes = token, force, force
		err := unlockRun(ctx, u.opts)
		out := u.out.String()
		if err != nil {
			out += err.Error()
		}
		if code := exitCodeOf(err); code != wantCode || rdb.Exists(ctx, "lock:x").Val() != wantKey || len(out) > 10<<10 {
			t.Fatalf("exit %d, key exists %d, %d bytes of output: %.300s", code, rdb.Exists(ctx, "lock:x").Val(), len(out), out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %s: %.600s", w, out)
			}
		}
	}
	check(owner[:len(owner)-1]+"x", false, ExitCheckFailed, 1, `"verdict": "not_owner"`, `"value_bytes": 8388610`, `"truncated": true`)
	check(owner[:len(owner)-1], false, ExitCheckFailed, 1, `"verdict": "not_owner"`)
	check("", true, ExitCheckFailed, 1, "holds a value of 8388610 bytes")
	check(owner, false, 0, 0, `"verdict": "owned"`, `"deleted": true`)
	rdb.Set(ctx, "lock:x", owner, 0) // not <fence>:<owner>: the whole value is the token
	check(owner, false, 0, 0, `"verdict": "owned"`)
}
