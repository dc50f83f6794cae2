package simulate

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/store_write.lua
	storeWriteLua    string
	storeWriteScript = redis.NewScript(storeWriteLua)
	//go:embed scripts/failover.lua
	failoverLua    string
	failoverScript = redis.NewScript(failoverLua)
)

// LiveTolerance is the real time below which a live history.CodeOverlap or
// history.CodeLockLost is goroutine scheduling jitter, not a finding.
const LiveTolerance = 5 * time.Millisecond

// errPartitioned is what a partitioned process gets from Redis.
var errPartitioned = errors.New("partitioned: cannot reach Redis")

// LiveOptions configure RunLive. Everything it writes is under Prefix.
type LiveOptions struct {
	Client redis.UniversalClient
	// TimeScale is real seconds per virtual second (0.01: 30s take 300ms).
	TimeScale float64
	// Prefix starts every key written; empty means "lockctl:sim:{<random>}:"
	// (the hash tag keeps every key on one cluster slot).
	Prefix string
}

// KeyExistsError is RunLive's refusal to start when a key it would write
// (the prefix followed by lock, fence, store or receiver) already exists.
type KeyExistsError struct{ Key string }

func (e *KeyExistsError) Error() string {
	return fmt.Sprintf("key %q already exists, and a live run writes only keys it creates", e.Key)
}

// LiveResult is a live run: its verdict and violations (times in virtual ms)
// and the timeline it observed.
type LiveResult struct {
	Prefix     string      `json:"prefix"`
	TimeScale  float64     `json:"time_scale"`
	Verdict    string      `json:"verdict"`
	Violations []Violation `json:"violations"`
	Events     []Event     `json:"events"`
}

type liveGrant struct {
	actor   string
	seq     int       // 1 for the run's first grant, 2 for the next...
	modelAt time.Time // when it was granted, on the model's clock
	value   string    // the lock's value, "<fence>:<owner>"
	at      time.Time
	expires time.Time
	lostAt  time.Time // deleted by someone else (zero: only expiry ends it)
	// releasedAt: deleted by its holder (zero: not released).
	releasedAt time.Time
	// gaps: when its key was gone and a failover then put it back.
	gaps [][2]time.Time
}

func (g *liveGrant) end() time.Time {
	if !g.lostAt.IsZero() && g.lostAt.Before(g.expires) {
		return g.lostAt
	}
	return g.expires
}

// liveSnap is the lock state the run wrote at one moment (kept only when
// the scenario has a failover, which restores the one from the replication
// lag ago): the lock's value and expiry (present false: no key), the fence
// counter, and the clock jumps emulated so far (they cut a restored key's
// TTL too, as the server's clock has moved). at is on the model's clock (see
// stampLocked).
type liveSnap struct {
	at      time.Time
	present bool
	value   string
	expires time.Time
	counter int64
	jumped  time.Duration
}

type liveSection struct {
	start, end time.Time
	grant      *liveGrant
}

// liveStep is a step and its place in the file (idx); for a program step,
// also how many faults come before it (by time, then file order), so
// same-instant faults apply first, as in the model.
type liveStep struct {
	Step
	idx    int
	before int
}

// liveActor is one process of a live run, its state grouped by concern.
type liveActor struct {
	name string
	liveProgram
	liveFaults
	liveHold
	liveWork
}

// liveProgram is where an actor's program stands (see aheadLocked).
type liveProgram struct {
	steps []liveStep
	// stepAt is the current step's time on the model's clock: its due time
	// plus modelShift.
	stepAt time.Time
	// next is the program's next step (the steps before it are done);
	// shift is how late its steps run, modelShift how late they run on the
	// model's clock (pauses, work and calls, waits to acquire: not
	// scheduling jitter); freeAt is when the last step ended on the model's
	// clock; blocking: busy with work or a call, or waiting to acquire. See
	// aheadLocked.
	next       int
	shift      time.Duration
	modelShift time.Duration
	freeAt     time.Time
	blocking   bool
	// rank is the model's order of processes (1 first); waiting that it
	// waits to acquire, after a first refusal.
	rank    int
	waiting bool
}

// liveFaults are the pauses, partitions and crash that befell an actor.
type liveFaults struct {
	pausedUntil time.Time
	pauseStart  time.Time
	partUntil   time.Time
	crashed     bool
	pauses      [][2]time.Time
	// frozen: a pause stopped the renewer; inFlight: the program waits out
	// the pause with a step in flight and restarts the renewer after it.
	frozen   bool
	inFlight bool
	// woke: the current pause's wake event is recorded.
	woke bool
}

// liveHold is the lock an actor holds and its renewer.
type liveHold struct {
	lock      *lockcore.Lock
	grant     *liveGrant
	keeper    *lockcore.Keeper
	stopRenew chan struct{}
	renewDone chan struct{}
	checkedOK bool
	// renewDue is when renewLoop's next renewal is due, on the model's
	// clock (zero: none): steps and faults due then wait for it.
	renewDue time.Time
	// renewedAt: the lock's last acquire or renewal, on the model's clock.
	renewedAt time.Time
}

// liveWork is an actor's critical section and the work in it.
type liveWork struct {
	workCtx   context.Context
	cancelled bool
	inSection bool
	secStart  time.Time
	sections  []liveSection
	// busyUntil is when the work or call in progress ends, on the model's
	// clock (zero: none): steps and faults due then wait for it
	// (pendingLocked).
	busyUntil time.Time
}

type liveRun struct {
	sc        *Scenario
	p         leaseParams
	o         LiveOptions
	ctx       context.Context
	start     time.Time
	keys      lockcore.Keys
	storeKey  string
	recvKey   string
	mu        stateMu
	actors    []*liveActor
	grants    []*liveGrant
	maxFence  int64
	events    []Event
	viol      []Violation
	storeHigh int64
	applied   int // faults applied so far
	// counter is the fence counter's value as the run left it; snaps the
	// lock states it wrote, when failovers (the scenario has one).
	counter   int64
	snaps     []liveSnap
	failovers bool
	jumped    time.Duration // clock jumps emulated so far, in real time
	end       time.Time     // when the last program and fault were done
	// checkpointed are the sends done, with checkpoints on (in memory, as
	// in the model: the checkpoint store is assumed durable).
	checkpointed []string
}

// partClient is the Redis client as one process sees it: every call fails
// while the process is partitioned.
type partClient struct {
	redis.UniversalClient
	r *liveRun
	a *liveActor
}

func (c partClient) cut(ctx context.Context) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(errPartitioned)
	return cmd
}

// Eval fails while the process is partitioned.
func (c partClient) Eval(ctx context.Context, s string, k []string, args ...any) *redis.Cmd {
	if c.r.partitioned(c.a) {
		return c.cut(ctx)
	}
	return c.UniversalClient.Eval(ctx, s, k, args...)
}

// EvalSha fails while the process is partitioned.
func (c partClient) EvalSha(ctx context.Context, s string, k []string, args ...any) *redis.Cmd {
	if c.r.partitioned(c.a) {
		return c.cut(ctx)
	}
	return c.UniversalClient.EvalSha(ctx, s, k, args...)
}

// Get fails while the process is partitioned.
func (c partClient) Get(ctx context.Context, key string) *redis.StringCmd {
	if c.r.partitioned(c.a) {
		cmd := redis.NewStringCmd(ctx)
		cmd.SetErr(errPartitioned)
		return cmd
	}
	return c.UniversalClient.Get(ctx, key)
}

// RunLive plays the scenario against a real Redis: one goroutine per
// process running its steps at TimeScale, lockcore's Locker (and Keeper when
// owner checks and cancel-on-loss are both on; blind or non-cancelling
// renewers otherwise), a fenced store (a hash updated by a
// compare-fence-then-write script) and a receiver hash. A pause stops the
// process's renewer and worker; a partition fails its Redis calls; failover
// and clock_jump are emulated (the lock and fence counter put back as they
// were one replication lag earlier, or the key's TTL cut). Steps and faults
// due at one instant happen in file order, as in the model.
// It writes four keys under the prefix and deletes them at the end; it
// returns a *KeyExistsError, writing nothing, when one of them exists, and
// an error when Redis fails for another reason than a partition.
func RunLive(ctx context.Context, sc Scenario, o LiveOptions) (LiveResult, error) {
	if err := LiveRefusal(sc); err != nil {
		return LiveResult{}, err
	}
	sc.normalize()
	p, err := sc.resolve()
	if err != nil {
		return LiveResult{}, err
	}
	if o.TimeScale <= 0 {
		o.TimeScale = 0.01
	}
	if o.Prefix == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		o.Prefix = "lockctl:sim:{" + hex.EncodeToString(b[:]) + "}:"
	}
	r := &liveRun{sc: &sc, p: p, o: o, ctx: ctx,
		keys:     lockcore.Keys{Lock: o.Prefix + "lock", Fence: o.Prefix + "fence"},
		storeKey: o.Prefix + "store", recvKey: o.Prefix + "receiver"}
	// The run writes these four keys and deletes them at the end, so none
	// of them may hold anything of someone else's.
	for _, k := range r.written() {
		n, err := o.Client.Exists(ctx, k).Result()
		if err != nil {
			return LiveResult{}, err
		}
		if n > 0 {
			return LiveResult{}, &KeyExistsError{Key: k}
		}
	}
	defer r.cleanup()
	r.counter = max(sc.FenceStart, 1) - 1
	r.failovers = slices.ContainsFunc(sc.Steps, func(s Step) bool { return s.Do == ActFailover })
	r.snapLocked(r.start, false, "", time.Time{})
	// The counter exists from the start, as in the model: a missing one
	// would start at the server's TIME (lockcore's acquire), not at
	// fence_start, and a failover that puts it back to fence_start-1 would
	// stand for a replica that has it.
	if err := o.Client.Set(ctx, r.keys.Fence, r.counter, 0).Err(); err != nil {
		return LiveResult{}, err
	}
	byName := map[string]*liveActor{}
	var faults []liveStep
	for i, st := range sc.Steps {
		if st.Do.fault() {
			faults = append(faults, liveStep{Step: st, idx: i})
		}
	}
	for i, st := range sc.Steps {
		if st.Do == ActFailover || st.Do == ActClockJump {
			continue
		}
		a := byName[st.Actor]
		if a == nil {
			a = &liveActor{name: st.Actor}
			byName[st.Actor] = a
			r.actors = append(r.actors, a)
		}
		if st.Do.fault() {
			continue
		}
		before := 0
		for _, f := range faults {
			if f.AtMS < st.AtMS || (f.AtMS == st.AtMS && f.idx < i) {
				before++
			}
		}
		a.steps = append(a.steps, liveStep{Step: st, idx: i, before: before})
	}
	slices.SortStableFunc(faults, func(x, y liveStep) int { return int(x.AtMS - y.AtMS) })
	// The model's order of processes: by first step in time, then in the
	// file; it serves waiting acquires in that order.
	byTime := make([]int, len(sc.Steps))
	for i := range byTime {
		byTime[i] = i
	}
	slices.SortStableFunc(byTime, func(x, y int) int { return int(sc.Steps[x].AtMS - sc.Steps[y].AtMS) })
	rank := 0
	for _, i := range byTime {
		if a := byName[sc.Steps[i].Actor]; a != nil && a.rank == 0 {
			rank++
			a.rank = rank
		}
	}
	r.start = time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(r.actors)+1)
	for _, a := range r.actors {
		slices.SortStableFunc(a.steps, func(x, y liveStep) int { return int(x.AtMS - y.AtMS) })
		wg.Go(func() {
			if err := r.program(a); err != nil {
				errs <- err
			}
		})
	}
	wg.Go(func() { r.faults(faults, byName) })
	wg.Wait()
	for _, a := range r.actors {
		r.stopRenewer(a)
		r.endSection(a, time.Now())
	}
	r.end = time.Now()
	close(errs)
	if err := <-errs; err != nil {
		return LiveResult{}, err
	}
	return r.result(), nil
}

// written lists every key a live run writes.
func (r *liveRun) written() []string {
	return []string{r.keys.Lock, r.keys.Fence, r.storeKey, r.recvKey}
}

// cleanup deletes the keys the run wrote, and only those: one DEL each, so
// they need not share a cluster slot.
func (r *liveRun) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, k := range r.written() {
		r.o.Client.Del(ctx, k)
	}
}

func (r *liveRun) real(vms int64) time.Time {
	return r.start.Add(time.Duration(float64(vms) * r.o.TimeScale * float64(time.Millisecond)))
}

func (r *liveRun) dur(vms int64) time.Duration {
	return max(time.Duration(float64(vms)*r.o.TimeScale*float64(time.Millisecond)), time.Millisecond)
}

func (r *liveRun) virtual(t time.Time) int64 {
	return int64(float64(t.Sub(r.start)) / float64(time.Millisecond) / r.o.TimeScale)
}

func (r *liveRun) partitioned(a *liveActor) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Now().Before(a.partUntil)
}

func (r *liveRun) paused(a *liveActor) (bool, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Now().Before(a.pausedUntil), a.pausedUntil
}

func (r *liveRun) event(actor, kind string, ok bool, fence int64, note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, Event{AtMS: r.virtual(time.Now()), Actor: actor, Kind: kind, OK: ok, Fence: fence, Note: note, StoreFence: r.storeHigh})
}

func (r *liveRun) violate(code, actor, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.viol = append(r.viol, Violation{Code: code, AtMS: r.virtual(time.Now()), Actor: actor, Message: msg})
}

// sleepUntil waits for t; it returns false when ctx ends.
func (r *liveRun) sleepUntil(t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return r.ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.ctx.Done():
		return false
	}
}
