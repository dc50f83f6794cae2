// Package bench compares lockctl's lockcore with the Go lock libraries its
// users would otherwise pick, on one local redis-server in one run:
// acquire+release round trips and renewals per second at concurrency 1 and
// 32. The libraries take turns within each benchmark (see interleave), and
// bench/run prints the ratios. Each worker locks its own key, so the numbers
// are round-trip throughput, not contention.
package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
)

const ttl = 10 * time.Second

// loads are the worker counts every benchmark runs at, with the operations
// each worker does per turn: one call at 1 worker; 16 at 32 workers, so a
// turn (512 calls, some 10–20 ms) is long next to starting and joining its
// workers.
var loads = []struct{ workers, perTurn int }{{1, 1}, {32, 16}}

type lib struct {
	name    string
	acquire func(ctx context.Context, key string) (held, error)
}

type held interface {
	renew(ctx context.Context) error
	release(ctx context.Context) error
}

func libs(rdb *redis.Client) []lib {
	lk := lockcore.NewLocker(rdb)
	rl := redislock.New(rdb)
	rs := redsync.New(goredis.NewPool(rdb))
	return []lib{
		{"lockcore", func(ctx context.Context, key string) (held, error) {
			// Lock and fence counter on one slot, as lockctl builds them.
			l, err := lk.Acquire(ctx, lockcore.Keys{Lock: key, Fence: lockcore.FenceKeyFor(key)}, ttl)
			return lockcoreHeld{l}, err
		}},
		{"redislock", func(ctx context.Context, key string) (held, error) {
			l, err := rl.Obtain(ctx, key, ttl, nil)
			return redislockHeld{l}, err
		}},
		{"redsync", func(ctx context.Context, key string) (held, error) {
			m := rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1))
			return redsyncHeld{m}, m.LockContext(ctx)
		}},
	}
}

type lockcoreHeld struct{ l *lockcore.Lock }

func (h lockcoreHeld) renew(ctx context.Context) error   { return h.l.Renew(ctx) }
func (h lockcoreHeld) release(ctx context.Context) error { return h.l.Release(ctx) }

type redislockHeld struct{ l *redislock.Lock }

func (h redislockHeld) renew(ctx context.Context) error   { return h.l.Refresh(ctx, ttl, nil) }
func (h redislockHeld) release(ctx context.Context) error { return h.l.Release(ctx) }

type redsyncHeld struct{ m *redsync.Mutex }

func (h redsyncHeld) renew(ctx context.Context) error {
	ok, err := h.m.ExtendContext(ctx)
	if err == nil && !ok {
		err = fmt.Errorf("redsync: extend of %s refused", h.m.Name())
	}
	return err
}

func (h redsyncHeld) release(ctx context.Context) error {
	ok, err := h.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = fmt.Errorf("redsync: unlock of %s refused", h.m.Name())
	}
	return err
}

// client returns one pool big enough for 32 workers, shared by every
// library, with its connections already open: filling it while the first
// library is timed would count against that library.
func client(b *testing.B) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: benchAddr, PoolSize: 64})
	b.Cleanup(func() { _ = rdb.Close() })
	var wg sync.WaitGroup
	for range 32 {
		// A 50ms BLPOP holds its connection, so 32 of them open 32. Sent
		// raw: go-redis's BLPop rounds timeouts under 1s up to 1s and logs
		// a line for each.
		wg.Go(func() {
			if err := rdb.Do(context.Background(), "BLPOP", "bench:warmup", "0.05").Err(); err != nil && err != redis.Nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	return rdb
}

// interleave runs b.N rounds. In each round every library, in a fresh
// random order, takes one turn: workers goroutines each make perTurn calls
// on their own key, and the turn is timed from its start to the end of its
// last call. At one worker the call is made from the benchmark goroutine
// itself. Taking turns call by call, or a few milliseconds at a time, puts
// the libraries side by side under the same machine state: on a shared VM
// a round trip takes 15–20 µs or 100–160 µs depending on whether a process
// has to be woken, and that state lasts longer than a call but changes
// within a second, so libraries timed one after the other measured it more
// than themselves. setup returns the call for one library and key; it runs
// before the timer starts. Reports "<library>-ops/s" for each library,
// and no ns/op (a round holds every library's turn).
func interleave(b *testing.B, workers, perTurn int, libs []lib, setup func(l lib, key string) func() error) {
	calls := make([][]func() error, len(libs))
	for i, l := range libs {
		for w := range workers {
			calls[i] = append(calls[i], setup(l, fmt.Sprintf("bench:%s:%s:%d", b.Name(), l.name, w)))
		}
	}
	spent := make([]time.Duration, len(libs))
	errs := make([]error, workers)
	b.ResetTimer()
	for range b.N {
		for _, i := range rand.Perm(len(libs)) {
			start := time.Now()
			if workers == 1 {
				errs[0] = calls[i][0]()
			} else {
				var wg sync.WaitGroup
				for w := range workers {
					wg.Go(func() {
						for range perTurn {
							if errs[w] = calls[i][w](); errs[w] != nil {
								return
							}
						}
					})
				}
				wg.Wait()
			}
			spent[i] += time.Since(start)
			if err := errors.Join(errs...); err != nil {
				b.Fatalf("%s: %v", libs[i].name, err)
			}
		}
	}
	b.StopTimer()
	for i, l := range libs {
		b.ReportMetric(float64(b.N*workers*perTurn)/spent[i].Seconds(), l.name+"-ops/s")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAcquireRelease: one acquire and one owner-checked release per
// call (lockcore's acquire also INCRs the fence counter).
func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	libs := libs(client(b))
	for _, ld := range loads {
		b.Run(fmt.Sprintf("c=%d", ld.workers), func(b *testing.B) {
			interleave(b, ld.workers, ld.perTurn, libs, func(l lib, key string) func() error {
				return func() error {
					h, err := l.acquire(ctx, key)
					if err != nil {
						return err
					}
					return h.release(ctx)
				}
			})
		})
	}
}

// BenchmarkRenew: one owner-checked TTL reset per call on a held lock.
func BenchmarkRenew(b *testing.B) {
	ctx := context.Background()
	libs := libs(client(b))
	for _, ld := range loads {
		b.Run(fmt.Sprintf("c=%d", ld.workers), func(b *testing.B) {
			var hs []held
			interleave(b, ld.workers, ld.perTurn, libs, func(l lib, key string) func() error {
				h, err := l.acquire(ctx, key)
				if err != nil {
					b.Fatal(err)
				}
				hs = append(hs, h)
				return func() error { return h.renew(ctx) }
			})
			for _, h := range hs {
				if err := h.release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
