package inspect_test

import (
	"crypto/md5"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// asynqKeyspace writes what asynq v0.25.1 keeps for queue q with one task
// running under a unique lock (internal/base/base.go's keys;
// internal/rdb/rdb.go enqueueUniqueCmd, dequeueCmd; heartbeat.go's server
// and worker keys), and returns the task id, the unique key and the lease key.
func asynqKeyspace(t *testing.T, c *redis.Client, q string) (string, string, string) {
	t.Helper()
	id := guid()
	sum := md5.Sum([]byte(`{"order":42}`))
	p := "asynq:{" + q + "}:"
	unique := p + "unique:email:deliver:" + hex.EncodeToString(sum[:])
	lease := p + "lease"
	now := time.Now()
	must(t, c.Set(ctx, unique, id, time.Hour).Err())
	must(t, c.HSet(ctx, p+"t:"+id, "msg", "\x0a\x0demail:deliver", "state", "active", "unique_key", unique).Err())
	must(t, c.LPush(ctx, p+"active", id).Err())
	must(t, c.LPush(ctx, p+"pending", guid()).Err())
	must(t, c.ZAdd(ctx, lease, redis.Z{Score: float64(now.Add(30 * time.Second).Unix()), Member: id}).Err())
	must(t, c.ZAdd(ctx, p+"scheduled", redis.Z{Score: float64(now.Add(time.Hour).Unix()), Member: guid()}).Err())
	must(t, c.Set(ctx, p+"processed", "17", 0).Err())
	must(t, c.Set(ctx, p+"processed:"+now.UTC().Format("2006-01-02"), "3", 90*24*time.Hour).Err())
	must(t, c.Set(ctx, p+"paused", strconv.FormatInt(now.Unix(), 10), 0).Err())
	must(t, c.SAdd(ctx, "asynq:queues", q).Err())
	srv := "{worker-1:4242:" + guid() + "}"
	must(t, c.ZAdd(ctx, "asynq:servers", redis.Z{Score: float64(now.Add(10 * time.Second).Unix()), Member: "asynq:servers:" + srv}).Err())
	must(t, c.Set(ctx, "asynq:servers:"+srv, "\x0a\x08worker-1\x10\x92\x21", 10*time.Second).Err())
	must(t, c.HSet(ctx, "asynq:workers:"+srv, id, "\x0a\x08worker-1").Err())
	must(t, c.Expire(ctx, "asynq:workers:"+srv, 10*time.Second).Err())
	return id, unique, lease
}

// TestAsynq: the unique lock and the lease zset are named from asynq's
// source, and nothing else asynq writes gets an error (issue 27 item 3).
func TestAsynq(t *testing.T) {
	c := client(t)
	q := "q-" + redistest.Name(t)
	id, unique, lease := asynqKeyspace(t, c, q)
	u := readOne(t, c, unique, inspect.Options{})
	if u.Layout.Name != "asynq-unique" || u.Layout.Confidence != inspect.Certain || u.Owner != id || u.Holder.JobID != id || u.Worst() == inspect.SeverityError {
		t.Errorf("unique key: layout %+v owner %q holder %+v findings %s", u.Layout, u.Owner, u.Holder, codes(u))
	}
	l := readOne(t, c, lease, inspect.Options{})
	if l.Layout.Name != "asynq-lease" || len(l.Holders) != 1 || l.Holders[0].Owner != id || l.Holders[0].Expired || hasFinding(l, inspect.FindingNoTTL) || l.Worst() == inspect.SeverityError {
		t.Errorf("lease zset: layout %+v holders %+v findings %s", l.Layout, l.Holders, codes(l))
	}
	r := &inspect.Reader{Light: true, MaxValueBytes: inspect.ScanMaxValueBytes}
	n := 0
	must(t, r.Scan(ctx, c, inspect.ScanOptions{Pattern: "asynq:*"}, func(l inspect.Lock) error {
		n++
		if l.Worst() == inspect.SeverityError {
			t.Errorf("scan %s: layout %+v findings %v", l.Key, l.Layout, l.Findings)
		}
		return nil
	}))
	if n < 12 {
		t.Errorf("scanned %d asynq keys, want 12 or more", n)
	}
}

// TestJobLockValues: Bull's and BullMQ's job lock values (the conformance
// suite runs the real libraries), certain beside the job hash.
func TestJobLockValues(t *testing.T) {
	c := client(t)
	for value, want := range map[string]string{guid(): "bull", guid() + ":3": "bullmq"} {
		job := "bull:q-" + redistest.Name(t) + ":" + want + ":17"
		must(t, c.Set(ctx, job+":lock", value, 30*time.Second).Err())
		l := readOne(t, c, job+":lock", inspect.Options{})
		if l.Layout.Name != want || l.Layout.Confidence != inspect.Likely || l.Holder.JobID != "17" || l.Owner != value {
			t.Errorf("%s: layout %+v holder %+v", value, l.Layout, l.Holder)
		}
		must(t, c.HSet(ctx, job, "data", "{}").Err())
		// Bull's scripts touch both keys: on a cluster its prefix needs a {hash tag}.
		if l := readOne(t, c, job+":lock", inspect.Options{}); l.Layout.Confidence != inspect.Certain || codes(l) != "NO_FENCE:warning,CROSS_SLOT:warning" {
			t.Errorf("%s beside its job hash: layout %+v findings %s", value, l.Layout, codes(l))
		}
	}
}

// bullQueue writes what a Bull 4.16.5 (mq false) or BullMQ 6.7.0 (mq true)
// queue q keeps with job "job-1" running under its lock: the queue's keys
// (bull lib/queue.js, bullmq classes/queue-keys.js), the job hash
// (addJob-6.lua, addStandardJob-9.lua, moveToActive) and its lock. It
// returns the lock key and the queue's other keys.
func bullQueue(t *testing.T, c *redis.Client, q string, mq bool) (string, []string) {
	t.Helper()
	p := "bull:" + q + ":"
	now := time.Now().UnixMilli()
	token := guid()
	if mq {
		token += ":1"
		must(t, c.HSet(ctx, p+"meta", "opts.maxLenEvents", "10000", "version", "bullmq:6.7.0").Err())
		must(t, c.XAdd(ctx, &redis.XAddArgs{Stream: p + "events", Values: []string{"event", "added", "jobId", "job-1"}}).Err())
		must(t, c.ZAdd(ctx, p+"marker", redis.Z{Score: 0, Member: "0"}).Err())
		must(t, c.Set(ctx, p+"de:order-7", "job-2", time.Minute).Err())
		must(t, c.RPush(ctx, p+"job-1:logs", "started").Err())
	}
	must(t, c.Set(ctx, p+"id", "2", 0).Err())
	must(t, c.LPush(ctx, p+"active", "job-1").Err())
	must(t, c.LPush(ctx, p+"wait", "job-2").Err())
	must(t, c.Set(ctx, p+"stalled-check", strconv.FormatInt(now, 10), 30*time.Second).Err())
	for _, id := range []string{"job-1", "job-2"} {
		must(t, c.HSet(ctx, p+id, "name", "__default__", "data", `{"n":1}`, "opts", `{"attempts":1}`, "timestamp", now, "delay", 0, "priority", 0).Err())
	}
	must(t, c.HSet(ctx, p+"job-1", "processedOn", now, "ats", 1).Err())
	must(t, c.Set(ctx, p+"job-1:lock", token, 30*time.Second).Err())
	keys, err := c.Keys(ctx, p+"*").Result()
	must(t, err)
	return p + "job-1:lock", slices.DeleteFunc(keys, func(k string) bool { return k == p+"job-1:lock" })
}

// TestBullQueueKeys: a Bull or BullMQ queue's keys are its companions,
// named by library, never locks, so `watch --pattern` makes no ownership
// event for them (issue 44); keys of those names with no queue beside
// them are not taken for one.
func TestBullQueueKeys(t *testing.T) {
	c := client(t)
	for _, mq := range []bool{false, true} {
		name := map[bool]string{false: "bull", true: "bullmq"}[mq]
		lock, others := bullQueue(t, c, name+"-"+redistest.Name(t), mq)
		if l := readOne(t, c, lock, inspect.Options{}); l.Layout.Name != name || l.Layout.Confidence != inspect.Certain || l.Role != "" {
			t.Errorf("%s: layout %+v role %q", lock, l.Layout, l.Role)
		}
		for _, k := range others {
			want := inspect.RoleJobQueue
			if strings.HasSuffix(k, ":job-1") || strings.HasSuffix(k, ":job-2") {
				want = inspect.RoleJob
			}
			if l := readOne(t, c, k, inspect.Options{}); l.Layout.Name != name || l.Role != want || len(l.Findings) != 0 {
				t.Errorf("%s (%s): layout %+v role %q findings %s; want %s %s, none", k, l.Type, l.Layout, l.Role, codes(l), name, want)
			}
		}
	}
	// The names alone: a counter, a hash of job-like fields and a "meta"
	// hash side by side, or an "events" stream or an "active" list, with
	// no queue beside them, are no queue's.
	p, p2, p3 := "app:"+redistest.Name(t)+":", "app2:"+redistest.Name(t)+":", "app3:"+redistest.Name(t)+":"
	must(t, c.Set(ctx, p+"id", "7", 0).Err())
	must(t, c.HSet(ctx, p+"42", "name", "ada").Err())
	must(t, c.HSet(ctx, p+"meta", "version", "3").Err())
	must(t, c.XAdd(ctx, &redis.XAddArgs{Stream: p3 + "events", Values: []string{"event", "signup"}}).Err())
	must(t, c.LPush(ctx, p2+"active", "ada").Err())
	for _, k := range []string{p + "id", p + "42", p + "meta", p3 + "events", p2 + "active"} {
		if l := readOne(t, c, k, inspect.Options{}); l.Layout.Name != "unknown" || l.Role == inspect.RoleJobQueue || l.Role == inspect.RoleJob {
			t.Errorf("%s alone: layout %+v role %q; want unknown", k, l.Layout, l.Role)
		}
	}
}

// TestRQ: what an RQ 1.13.0 worker keeps while job id runs on queue q
// (queue.py, registry.py, worker.py, worker_registration.py; the
// conformance suite runs the real package): the started-job zset is the
// lock, every other key a companion with no finding (issue 44); without
// the queue set, a hash named like a job is no job.
func TestRQ(t *testing.T) {
	c := client(t)
	q, id, worker := "q-"+redistest.Name(t), guid(), "w"+randHex(16)
	now := time.Now()
	wip := "rq:wip:" + q
	must(t, c.ZAdd(ctx, wip, redis.Z{Score: float64(now.Add(90 * time.Second).Unix()), Member: id}).Err())
	others := map[string]string{"rq:queues": inspect.RoleJobQueue, "rq:job:" + id: inspect.RoleJob, "rq:worker:" + worker: inspect.RoleJobQueue,
		"rq:workers": inspect.RoleJobQueue, "rq:workers:" + q: inspect.RoleJobQueue, "rq:clean_registries:" + q: inspect.RoleJobQueue,
		"rq:finished:" + q: inspect.RoleJobQueue, "rq:queue:" + q: inspect.RoleJobQueue}
	must(t, c.SAdd(ctx, "rq:queues", "rq:queue:"+q).Err())
	must(t, c.HSet(ctx, "rq:job:"+id, "status", "started", "origin", q, "worker_name", worker, "last_heartbeat", now.UTC().Format(time.RFC3339)).Err())
	must(t, c.HSet(ctx, "rq:worker:"+worker, "state", "busy", "queues", q, "current_job", id).Err())
	must(t, c.Expire(ctx, "rq:worker:"+worker, 90*time.Second).Err())
	must(t, c.SAdd(ctx, "rq:workers", "rq:worker:"+worker).Err())
	must(t, c.SAdd(ctx, "rq:workers:"+q, "rq:worker:"+worker).Err())
	must(t, c.Set(ctx, "rq:clean_registries:"+q, "1", 899*time.Second).Err())
	must(t, c.ZAdd(ctx, "rq:finished:"+q, redis.Z{Score: float64(now.Add(500 * time.Second).Unix()), Member: guid()}).Err())
	must(t, c.RPush(ctx, "rq:queue:"+q, guid()).Err())
	l := readOne(t, c, wip, inspect.Options{})
	if l.Layout.Name != "rq" || l.Layout.Confidence != inspect.Certain || len(l.Holders) != 1 || l.Holders[0].Owner != id || l.Holders[0].Expired || codes(l) != "NO_FENCE:warning" {
		t.Errorf("started jobs: layout %+v holders %+v findings %s", l.Layout, l.Holders, codes(l))
	}
	for k, role := range others {
		if l := readOne(t, c, k, inspect.Options{}); l.Layout.Name != "rq" || l.Role != role || len(l.Findings) != 0 {
			t.Errorf("%s (%s): layout %+v role %q findings %s; want rq %s, none", k, l.Type, l.Layout, l.Role, codes(l), role)
		}
	}
	// A worker started with the scheduler: its pid under the queue's scheduler lock, 61 s.
	must(t, c.Set(ctx, "rq:scheduler-lock:"+q, "48213", 61*time.Second).Err())
	if l := readOne(t, c, "rq:scheduler-lock:"+q, inspect.Options{}); l.Layout.Name != "rq" || l.Owner != "48213" || l.Holder.PID != 48213 || codes(l) != "LEASE_OVER_CAP:warning,NO_FENCE:warning" {
		t.Errorf("scheduler lock: layout %+v owner %q holder %+v findings %s", l.Layout, l.Owner, l.Holder, codes(l))
	}
	must(t, c.Del(ctx, "rq:queues").Err())
	if l := readOne(t, c, "rq:job:"+id, inspect.Options{}); l.Role == inspect.RoleJob {
		t.Errorf("a job hash with no queue set: layout %+v role %q; want no job", l.Layout, l.Role)
	}
}
