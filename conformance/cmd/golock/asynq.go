package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	goredislib "github.com/redis/go-redis/v9"
)

// asynqUniqueTTL is the unique option's TTL: under the 60 s lease cap, and
// long enough to outlive the crash step's reads.
const asynqUniqueTTL = 30 * time.Second

// asynqLock enqueues a task with asynq.Unique on the queue name (its keys
// "asynq:{<name>}:..."), and runs a server whose handler holds the task until
// release: the unique key "asynq:{<name>}:unique:<type>:" = the task id
// (hibiken/asynq v0.26.0, internal/rdb/rdb.go enqueueUniqueCmd) and the
// lease zset "asynq:{<name>}:lease" scored by the lease's end, extended by
// the server's heartbeater (dequeueCmd, ExtendLease). On release the handler
// returns nil: asynq deletes the unique key and the lease member.
func asynqLock(ctx context.Context, rdb *goredislib.Client, addr, name string) (lock, error) {
	opt := asynq.RedisClientOpt{Addr: addr}
	info, err := asynq.NewClient(opt).Enqueue(asynq.NewTask("report:"+name, nil), asynq.Queue(name), asynq.Unique(asynqUniqueTTL))
	if err != nil {
		return lock{}, fmt.Errorf("asynq enqueue: %w", err)
	}
	held, done := make(chan struct{}), make(chan struct{})
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: 1, Queues: map[string]int{name: 1}, LogLevel: asynq.ErrorLevel})
	handler := asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		close(held)
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err := srv.Start(handler); err != nil {
		return lock{}, fmt.Errorf("asynq server: %w", err)
	}
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		return lock{}, fmt.Errorf("asynq: task %s not started in 20 s", info.ID)
	}
	unique, err := rdb.Keys(ctx, "asynq:{"+name+"}:unique:*").Result()
	if err != nil || len(unique) != 1 {
		return lock{}, fmt.Errorf("asynq: unique keys %v (%v), want one", unique, err)
	}
	keys := []string{unique[0], "asynq:{" + name + "}:lease"}
	return lock{keys: keys, owner: info.ID,
		renew: func() error { return nil }, // the heartbeater extends the lease
		release: func() error {
			close(done)
			// The next holder's task must go to its own server, not this one.
			defer srv.Shutdown()
			for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				if n, err := rdb.Exists(ctx, keys...).Result(); err == nil && n == 0 {
					return nil
				}
			}
			return fmt.Errorf("asynq: %v still there 10 s after the task returned", keys)
		}}, nil
}
