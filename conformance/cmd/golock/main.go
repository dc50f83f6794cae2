// Command golock takes a lock with a real Go lock library and holds it until
// told to renew or release it on stdin, or until it is killed: the Go driver
// of the conformance suite (conformance/driver_test.go).
//
// Usage: golock <library> <mode> <host:port> <name>
//
// It prints one JSON line per action on stdout: {"op":"acquired","keys":[...],
// "owner_hex":"..."} after acquiring, {"op":"renewed"} and {"op":"released"}
// after the stdin lines "renew" and "release", {"op":"error","error":"..."}
// on failure (then exits 1).
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	zero "github.com/zeromicro/go-zero/core/stores/redis"
)

// lock is what each library's adapter gives back after acquiring.
type lock struct {
	keys    []string
	owner   string
	renew   func() error
	release func() error
}

func main() {
	if len(os.Args) != 5 {
		fail(fmt.Errorf("usage: golock <library> <mode> <host:port> <name>"))
	}
	lib, mode, addr, name := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	ctx := context.Background()
	rdb := goredislib.NewClient(&goredislib.Options{Addr: addr})
	var l lock
	var err error
	switch lib {
	case "redsync":
		l, err = redsyncLock(rdb, mode, name)
	case "redislock":
		l, err = bsmLock(ctx, rdb, mode, name)
	case "rueidislock":
		l, err = rueidisLock(ctx, rdb, mode, addr, name)
	case "go-zero":
		l, err = zeroLock(ctx, rdb, mode, addr, name)
	default:
		err = fmt.Errorf("unknown library %q: redsync, redislock, rueidislock or go-zero", lib)
	}
	if err != nil {
		fail(err)
	}
	emit(map[string]any{"op": "acquired", "keys": l.keys, "owner_hex": hex.EncodeToString([]byte(l.owner))})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "renew":
			if err := l.renew(); err != nil {
				fail(err)
			}
			emit(map[string]any{"op": "renewed"})
		case "release":
			if err := l.release(); err != nil {
				fail(err)
			}
			emit(map[string]any{"op": "released"})
		}
	}
	// stdin closed: hold until killed (the crash step).
	select {}
}

// redsyncLock: default expiry 8 s; mode "ttl" 20 s.
func redsyncLock(rdb *goredislib.Client, mode, name string) (lock, error) {
	var opts []redsync.Option
	if mode == "ttl" {
		opts = append(opts, redsync.WithExpiry(20*time.Second))
	}
	m := redsync.New(goredis.NewPool(rdb)).NewMutex(name, opts...)
	if err := m.Lock(); err != nil {
		return lock{}, err
	}
	return lock{keys: []string{name}, owner: m.Value(),
		renew:   func() error { _, err := m.Extend(); return err },
		release: func() error { _, err := m.Unlock(); return err }}, nil
}

// bsmLock: no default TTL in the API (10 s here); mode "metadata" adds metadata.
func bsmLock(ctx context.Context, rdb *goredislib.Client, mode, name string) (lock, error) {
	opts := &redislock.Options{}
	if mode == "metadata" {
		opts.Metadata = "worker-7"
	}
	ttl := 10 * time.Second
	if mode == "ttl" {
		ttl = 20 * time.Second
	}
	l, err := redislock.Obtain(ctx, rdb, name, ttl, opts)
	if err != nil {
		return lock{}, err
	}
	return lock{keys: []string{name}, owner: l.Token(),
		renew:   func() error { return l.Refresh(ctx, ttl, nil) },
		release: func() error { return l.Release(ctx) }}, nil
}

// rueidisLock: 3 keys (majority 2), 5 s validity extended every 2.5 s by
// its own watchdog; release cancels the context.
func rueidisLock(ctx context.Context, rdb *goredislib.Client, mode, addr, name string) (lock, error) {
	locker, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true},
	})
	if err != nil {
		return lock{}, err
	}
	_, cancel, err := locker.WithContext(ctx, name)
	if err != nil {
		return lock{}, err
	}
	keys := []string{"rueidislock:0:" + name, "rueidislock:1:" + name, "rueidislock:2:" + name}
	owner, err := heldValue(ctx, rdb, keys)
	if err != nil {
		return lock{}, err
	}
	return lock{keys: keys, owner: owner,
		renew:   func() error { return nil }, // its watchdog renews
		release: func() error { cancel(); time.Sleep(200 * time.Millisecond); return nil }}, nil
}

// zeroLock: go-zero's default lease is 0 s + 500 ms tolerance; mode "ttl"
// sets 20 s. Acquiring again with the same id renews (its lock.lua).
func zeroLock(ctx context.Context, rdb *goredislib.Client, mode, addr, name string) (lock, error) {
	l := zero.NewRedisLock(zero.New(addr), name)
	if mode == "ttl" {
		l.SetExpire(20)
	}
	ok, err := l.AcquireCtx(ctx)
	if err != nil || !ok {
		return lock{}, fmt.Errorf("go-zero acquire: ok=%v err=%v", ok, err)
	}
	// go-zero keeps its id unexported: read what it wrote.
	owner, err := rdb.Get(ctx, name).Result()
	if err != nil {
		return lock{}, fmt.Errorf("go-zero lock %s gone before it was read (lease %s): %w", name, mode, err)
	}
	return lock{keys: []string{name}, owner: owner,
		renew: func() error {
			ok, err := l.AcquireCtx(ctx)
			if err == nil && !ok {
				err = fmt.Errorf("go-zero renew refused")
			}
			return err
		},
		release: func() error { _, err := l.ReleaseCtx(ctx); return err }}, nil
}

// heldValue reads the value of the first of keys that exists.
func heldValue(ctx context.Context, rdb *goredislib.Client, keys []string) (string, error) {
	for _, k := range keys {
		if v, err := rdb.Get(ctx, k).Result(); err == nil {
			return v, nil
		}
	}
	return "", fmt.Errorf("none of %v exists after acquiring", keys)
}

func emit(v map[string]any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func fail(err error) {
	emit(map[string]any{"op": "error", "error": err.Error()})
	os.Exit(1)
}
