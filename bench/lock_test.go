// Package bench compares lockctl's lockcore with the Go lock libraries its
// users would otherwise pick, on one local redis-server in one run:
// acquire+release round trips and renewals per second at concurrency 1 and
// 32. bench/run prints the ratios. Each worker locks its own key, so the
// numbers are round-trip throughput, not contention.
package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
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

// concurrencies are the worker counts every benchmark runs at. The
// libraries run one after the other at each count, so a change in machine
// load hits them alike; bench/run repeats whole runs for the same reason.
var concurrencies = []int{1, 32}

// lib is one library under test: acquire returns the operations on a held
// lock for one key.
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
	all := []lib{
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
	// The library timed first pays for a cold machine; bench/run rotates
	// the order between runs (BENCH_ROTATE=0,1,2) so none always does.
	r, _ := strconv.Atoi(os.Getenv("BENCH_ROTATE"))
	r = (r%len(all) + len(all)) % len(all)
	return append(all[r:], all[:r]...)
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

// parallel runs op b.N times split over c workers (worker w gets its own
// key) and reports ops/s.
func parallel(b *testing.B, c int, setup func(key string) func() error) {
	ops := make([]func() error, c)
	for w := range c {
		ops[w] = setup(fmt.Sprintf("bench:%s:%d", b.Name(), w))
	}
	var wg sync.WaitGroup
	errs := make(chan error, c)
	b.ResetTimer()
	for w := range c {
		n := b.N / c
		if w < b.N%c {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if err := ops[w](); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkAcquireRelease: one acquire and one owner-checked release per op
// (lockcore's acquire also INCRs the fence counter).
func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	for _, c := range concurrencies {
		for _, l := range libs(client(b)) {
			b.Run(fmt.Sprintf("c=%d/lib=%s", c, l.name), func(b *testing.B) {
				parallel(b, c, func(key string) func() error {
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
}

// BenchmarkRenew: one owner-checked TTL reset per op on a held lock.
func BenchmarkRenew(b *testing.B) {
	ctx := context.Background()
	for _, c := range concurrencies {
		for _, l := range libs(client(b)) {
			b.Run(fmt.Sprintf("c=%d/lib=%s", c, l.name), func(b *testing.B) {
				var hs []held
				parallel(b, c, func(key string) func() error {
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
}
