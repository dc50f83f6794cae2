package simulate

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
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

// LiveTolerance is the real time below which a live OVERLAP or
// LOCK_LOST_WHILE_WORKING is goroutine scheduling jitter, not a finding.
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

type liveActor struct {
	name        string
	steps       []liveStep
	pausedUntil time.Time
	pauseStart  time.Time
	checkedOK   bool
	partUntil   time.Time
	crashed     bool
	lock        *lockcore.Lock
	grant       *liveGrant
	keeper      *lockcore.Keeper
	stopRenew   chan struct{}
	renewDone   chan struct{}
	workCtx     context.Context
	cancelled   bool
	inSection   bool
	secStart    time.Time
	sections    []liveSection
	pauses      [][2]time.Time
	// frozen: a pause stopped the renewer; inFlight: the program waits out
	// the pause with a step in flight and restarts the renewer after it.
	frozen   bool
	inFlight bool
	// woke: the current pause's wake event is recorded.
	woke bool
	// stepAt is the current step's time on the model's clock: its due time
	// plus modelShift.
	stepAt time.Time
	// renewDue is when renewLoop's next renewal is due, busyUntil when the
	// work or call in progress ends, on the model's clock (zero: none):
	// steps and faults due then wait for them (pendingLocked).
	renewDue  time.Time
	busyUntil time.Time
	// renewedAt: the lock's last acquire or renewal, on the model's clock.
	renewedAt time.Time
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

type liveRun struct {
	sc        *Scenario
	p         leaseParams
	o         LiveOptions
	ctx       context.Context
	start     time.Time
	keys      lockcore.Keys
	storeKey  string
	recvKey   string
	mu        sync.Mutex
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
	if start := sc.FenceStart; start > 1 {
		if err := o.Client.Set(ctx, r.keys.Fence, start-1, 0).Err(); err != nil {
			return LiveResult{}, err
		}
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

// program runs an actor's steps in order; like the model, a step that falls
// in a pause runs at the wake-up (in flight: it already passed its checks)
// and later steps move by the same delay.
func (r *liveRun) program(a *liveActor) error {
	for _, ls := range a.steps {
		st := ls.Step
		r.mu.Lock()
		due := r.real(st.AtMS).Add(a.shift)
		at := r.nextDueLocked(a)
		r.mu.Unlock()
		if !r.sleepUntil(maxTime(due, at)) {
			return r.ctx.Err()
		}
		// Its turn, as in the model: after the faults listed before it,
		// and what else is due before it (aheadLocked).
		if !r.await(func() bool { return r.applied >= ls.before && !r.aheadLocked(a, at, ls.idx) }) {
			return r.ctx.Err()
		}
		inFlight := false
		for {
			r.mu.Lock()
			p, until := time.Now().Before(a.pausedUntil), a.pausedUntil
			// Due by the end of a pause, this step is the one in flight
			// at the wake-up, even when the wake-up is already past or
			// another goroutine marked it so (wakeInFlightLocked).
			if p || a.inFlight || r.wakeInFlightLocked(a) {
				a.inFlight, inFlight = true, true
			}
			r.mu.Unlock()
			if !p {
				break
			}
			if !r.sleepUntil(until) {
				return r.ctx.Err()
			}
		}
		r.mu.Lock()
		crashed := a.crashed
		if late := time.Since(due); late > 0 {
			a.shift += late
		}
		if inFlight { // it runs at the wake-up
			at = maxTime(at, a.pausedUntil)
		}
		a.modelShift += at.Sub(r.real(st.AtMS).Add(a.modelShift))
		a.stepAt, a.freeAt = at, at
		r.mu.Unlock()
		if crashed {
			return nil
		}
		if inFlight {
			r.woke(a)
		} else {
			r.thaw(a, false)
		}
		began := time.Now()
		if err := r.step(a, st, inFlight); err != nil {
			return err
		}
		if inFlight {
			r.thaw(a, true)
		}
		r.mu.Lock()
		if st.Do == ActAcquire && st.WaitMS > 0 {
			// As in the model, the steps after it move by the wait.
			a.shift += time.Since(began)
			a.modelShift += time.Since(began)
		}
		a.next++
		r.mu.Unlock()
	}
	r.stopRenewer(a)
	r.endSection(a, time.Now())
	return nil
}

// wakeInFlightLocked reports whether a's next step is the one in flight at
// the wake-up of a's last pause, not yet woken: due, on the model's clock,
// from the pause's start to its end, the wake-up instant included. The
// model runs it at the wake-up, before the cancellation and renewal timers.
// r.mu must be held.
func (r *liveRun) wakeInFlightLocked(a *liveActor) bool {
	if a.woke || a.pausedUntil.IsZero() || a.next >= len(a.steps) {
		return false
	}
	t := r.nextDueLocked(a)
	return !t.Before(a.pauseStart) && !t.After(a.pausedUntil)
}

// nextDueLocked is when a's next step is due on the model's clock: its time
// moved by the model's delays so far, and not before the last step ended.
// r.mu must be held.
func (r *liveRun) nextDueLocked(a *liveActor) time.Time {
	return maxTime(r.real(a.steps[a.next].AtMS).Add(a.modelShift), a.freeAt)
}

func (r *liveRun) step(a *liveActor, st Step, inFlight bool) error {
	client := partClient{UniversalClient: r.o.Client, r: r, a: a}
	r.mu.Lock()
	inSection, cancelled := a.inSection, a.cancelled
	r.mu.Unlock()
	guards := r.sc.Guards
	if guards.CancelOnLoss && inSection && !inFlight {
		r.mu.Lock()
		ctx := a.workCtx
		r.mu.Unlock()
		if ctx != nil && ctx.Err() != nil && context.Cause(ctx) != context.Canceled {
			r.cancel(a, context.Cause(ctx))
			inSection, cancelled = false, true
		}
	}
	switch st.Do {
	case ActAcquire:
		return r.acquire(a, client, st)
	case ActRelease:
		return r.release(a, client)
	case ActRenew:
		if a.lock != nil && r.renewOnce(a, client, a.stepAt) == renewRefused && guards.CancelOnLoss {
			r.cancel(a, lockcore.ErrLeaseLost)
		}
		return nil
	case ActWork, ActCall:
		if !inSection {
			r.event(a.name, string(st.Do), false, 0, skipNote(a.name, cancelled))
			return nil
		}
		r.event(a.name, string(st.Do), true, 0, string(st.Do)+" for "+fmtMS(st.ForMS))
		if inFlight {
			// Only its start was in flight: thaw now, so the rest is work
			// like any other, or is cancelled at once if the lease ran out.
			r.thaw(a, true)
		}
		r.busy(a, st.Do, r.dur(st.ForMS))
		return nil
	case ActWrite:
		if !inSection {
			r.event(a.name, "write", false, 0, skipNote(a.name, cancelled))
			return nil
		}
		if r.sc.Check == CheckTTL {
			ok := a.checkedOK
			if !inFlight {
				v, err := client.Get(r.ctx, r.keys.Lock).Result()
				ok = err == nil && v == a.lock.Value()
			}
			if !ok {
				r.event(a.name, "write", false, 0, "TTL check: the key is not "+a.name+"'s; write skipped")
				return nil
			}
		}
		fencing := "0"
		if guards.Fencing {
			fencing = "1"
		}
		res, err := storeWriteScript.Run(r.ctx, r.o.Client, []string{r.storeKey}, a.lock.Fence, a.name, fencing, a.grant.seq).Int64Slice()
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.storeHigh = max(r.storeHigh, a.lock.Fence)
		r.mu.Unlock()
		if res[0] == 0 {
			r.event(a.name, "write", false, a.lock.Fence, fmt.Sprintf("rejected: fence %d < %d", a.lock.Fence, res[1]))
			return nil
		}
		r.event(a.name, "write", true, a.lock.Fence, "accepted")
		// Stale as in the model: a later grant has written already.
		if newest := int(res[2]); a.grant.seq < newest {
			r.mu.Lock()
			newer := r.grants[newest-1].actor
			r.mu.Unlock()
			r.violate(CodeStaleWrite, a.name, fmt.Sprintf("the store accepted %s's write with fence %d after %s's newer write", a.name, a.lock.Fence, newer))
		}
		return nil
	case ActSend:
		if !inSection {
			r.event(a.name, "send", false, 0, skipNote(a.name, cancelled))
			return nil
		}
		r.mu.Lock()
		done := r.sc.Checkpoints && slices.Contains(r.checkpointed, st.Key)
		r.mu.Unlock()
		if done {
			r.event(a.name, "send", false, 0, "skipped: "+st.Key+" is checkpointed; resuming after it")
			return nil
		}
		if r.sc.Checkpoints {
			// The checkpoint is written with the effect, as in the model.
			defer func() {
				r.mu.Lock()
				r.checkpointed = append(r.checkpointed, st.Key)
				r.mu.Unlock()
			}()
		}
		if guards.IdempotencyKey {
			fresh, err := r.o.Client.HSetNX(r.ctx, r.recvKey, st.Key, 1).Result()
			if err != nil {
				return err
			}
			if !fresh {
				r.event(a.name, "send", true, 0, "deduped by the receiver: "+st.Key)
				return nil
			}
			r.event(a.name, "send", true, 0, "effect applied: "+st.Key)
			return nil
		}
		n, err := r.o.Client.HIncrBy(r.ctx, r.recvKey, st.Key, 1).Result()
		if err != nil {
			return err
		}
		r.event(a.name, "send", true, 0, "effect applied: "+st.Key)
		if n > 1 {
			r.violate(CodeDuplicate, a.name, fmt.Sprintf("%s applied %d times", st.Key, n))
		}
	}
	return nil
}

func skipNote(name string, cancelled bool) string {
	if cancelled {
		return "skipped: " + name + "'s work was cancelled"
	}
	return "skipped: " + name + " does not hold the lock"
}

// busy is work or a blocking call (kind) of d: it makes progress only while
// the process is not paused, returns early when cancel-on-loss cancels the
// work, and records kind_done when it ends.
func (r *liveRun) busy(a *liveActor, kind Action, d time.Duration) {
	// It counts from the step's time on the model's clock: the scheduling
	// jitter before it began counts as done, so it ends when the model's
	// does, and steps and faults due then wait for its end.
	r.mu.Lock()
	remaining := d - max(time.Since(a.stepAt), 0)
	a.busyUntil = a.stepAt.Add(d)
	a.blocking = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		if remaining <= 0 {
			a.freeAt = a.busyUntil
		} else { // cancelled or crashed: it ends now
			a.freeAt = r.stampLocked(a, time.Now(), false)
		}
		a.blocking, a.busyUntil = false, time.Time{}
		r.mu.Unlock()
	}()
	defer func() {
		if remaining <= 0 {
			r.event(a.name, string(kind)+"_done", true, 0, string(kind)+" finished")
		}
	}()
	for remaining > 0 {
		if p, until := r.paused(a); p {
			if !r.sleepUntil(until) {
				return
			}
			r.woke(a)
			r.thaw(a, false)
			r.mu.Lock()
			a.busyUntil = until.Add(remaining)
			r.mu.Unlock()
			continue
		}
		r.mu.Lock()
		ctx, crashed, cancelled := a.workCtx, a.crashed, a.cancelled
		r.mu.Unlock()
		if crashed || cancelled {
			return
		}
		chunk := min(remaining, time.Millisecond)
		var done <-chan struct{}
		if r.sc.Guards.CancelOnLoss && ctx != nil {
			done = ctx.Done()
		}
		began := time.Now()
		t := time.NewTimer(chunk)
		select {
		case <-t.C:
			// What passed counts, not the chunk asked for (a timer fires
			// late, by more under load), up to a pause that began meanwhile.
			end := time.Now()
			r.mu.Lock()
			if a.pauseStart.After(began) {
				end = minTime(end, a.pauseStart)
			}
			r.mu.Unlock()
			remaining -= end.Sub(began)
		case <-done:
			t.Stop()
			if context.Cause(ctx) == context.Canceled {
				// The renewer was stopped by a pause, not by the lease.
				if !r.sleepUntil(time.Now().Add(chunk)) {
					return
				}
				continue
			}
			r.cancel(a, context.Cause(ctx))
			return
		case <-r.ctx.Done():
			t.Stop()
			return
		}
	}
}

func (r *liveRun) acquire(a *liveActor, client partClient, st Step) error {
	r.mu.Lock()
	holding := a.inSection
	r.mu.Unlock()
	if holding {
		r.event(a.name, "acquire", false, 0, "skipped: "+a.name+" already holds the lock")
		return nil
	}
	locker := lockcore.NewLocker(client)
	lease := r.dur(r.p.lease)
	began := time.Now()
	deadline := began.Add(r.dur(st.WaitMS))
	retry := max(lease/100, time.Millisecond)
	for first := true; ; {
		// As in the model, a crashed process stops waiting and a paused
		// one is not served until it wakes.
		r.mu.Lock()
		crashed, pausedUntil := a.crashed, a.pausedUntil
		r.mu.Unlock()
		if crashed {
			return nil
		}
		if time.Now().Before(pausedUntil) {
			if !r.sleepUntil(pausedUntil) {
				return r.ctx.Err()
			}
			continue
		}
		// A waiter is served last at an instant, as in the model: after
		// everything else due by now (real now: a little later than the
		// model's, by the jitter, so what is due at the instant is in), and
		// after the waiters before it in the model's order.
		if !first && !r.await(func() bool {
			return time.Now().After(deadline) || !r.aheadLocked(a, time.Now(), math.MaxInt) && !r.waiterBeforeLocked(a)
		}) {
			return r.ctx.Err()
		}
		sent := time.Now()
		lock, err := locker.Acquire(r.ctx, r.keys, lease)
		r.locked(func() { a.blocking = false })
		switch {
		case err == nil:
			r.locked(func() { a.waiting = false })
			r.granted(a, lock, sent, first)
			return nil
		case errors.Is(err, lockcore.ErrNotObtained), errors.Is(err, errPartitioned):
			// As in the model: the first refusal, and giving up.
			switch {
			case st.WaitMS == 0:
				r.event(a.name, "acquire", false, 0, r.refusal(err))
				return nil
			case time.Now().After(deadline):
				r.locked(func() { a.waiting = false })
				r.event(a.name, "acquire", false, 0, "gave up after waiting "+fmtMS(r.virtual(time.Now())-r.virtual(began)))
				return nil
			case first:
				r.event(a.name, "acquire", false, 0, r.refusal(err)+"; retrying for up to "+fmtMS(st.WaitMS))
			}
			first = false
			r.locked(func() { a.waiting = true })
			// Waiting, as in the model: faults due now need not wait for it.
			r.locked(func() { a.blocking = true })
			if !r.sleepUntil(time.Now().Add(retry)) {
				return r.ctx.Err()
			}
		default:
			return err
		}
	}
}

// refusal says why an acquire was refused, as the model does: the holder
// and its PTTL in virtual time, or the partition.
func (r *liveRun) refusal(err error) string {
	var held *lockcore.HeldError
	if !errors.As(err, &held) {
		return err.Error()
	}
	who := "another owner"
	if g := r.grantOf(held.Value); g != nil {
		who = g.actor
	}
	pttl := fmtMS(int64(float64(held.PTTL.Milliseconds()) / r.o.TimeScale))
	if held.PTTL < 0 {
		pttl = "none"
	}
	return "not obtained: held by " + who + " (PTTL " + pttl + ")"
}

// granted records a's new lock; byStep: on the acquire step's first
// attempt (see stampLocked).
func (r *liveRun) granted(a *liveActor, lock *lockcore.Lock, sent time.Time, byStep bool) {
	g := &liveGrant{actor: a.name, value: lock.Value(), at: sent, expires: sent.Add(lock.Lease)}
	r.mu.Lock()
	backwards := lock.Fence <= r.maxFence
	prev := r.maxFence
	r.maxFence = max(r.maxFence, lock.Fence)
	r.counter = lock.Fence
	g.modelAt = r.stampLocked(a, sent, byStep)
	a.renewedAt = g.modelAt
	r.snapLocked(g.modelAt, true, lock.Value(), g.expires)
	r.grants = append(r.grants, g)
	g.seq = len(r.grants)
	a.lock, a.grant, a.inSection, a.cancelled, a.secStart = lock, g, true, false, time.Now()
	r.startRenewerLocked(a)
	r.mu.Unlock()
	r.event(a.name, "acquire", true, lock.Fence, fmt.Sprintf("SET NX PX %s, fence %d", fmtMS(r.p.lease), lock.Fence))
	if backwards {
		r.violate(CodeFenceBackwards, a.name, fmt.Sprintf("%s got fence %d, not above %d", a.name, lock.Fence, prev))
	}
}

// liveLease is the policy's lease in real time, for lockcore.Keeper (the
// other renewers use renewLoop's model clock). The Keeper measures the
// budget and the bound from the lock's last renewal
// (its AcquiredAt when it starts); one restarted after a pause gets what is
// left of them since a's first acquire, at least 1ns (0 would mean none).
func (r *liveRun) liveLease(a *liveActor) lockcore.Lease {
	l := lockcore.Lease{Lease: r.dur(r.p.lease), Renewable: r.p.renewable}
	spent := a.lock.AcquiredAt.Sub(a.grant.at)
	if r.p.budget > 0 {
		l.Budget = max(r.dur(r.p.budget)-spent, 1)
	}
	if r.p.renewable {
		l.RenewEvery = r.dur(r.p.renewEvery)
		if r.p.bound > 0 {
			l.RenewBound = max(r.dur(r.p.bound)-spent, 1)
		}
	}
	return l
}

// startRenewerLocked starts lockcore's Keeper when owner checks and
// cancel-on-loss are on; otherwise a renewer with the guard that is off
// missing (blind PEXPIRE, or failures that cancel nothing). r.mu must be
// held.
func (r *liveRun) startRenewerLocked(a *liveActor) {
	g := r.sc.Guards
	watch := func(ctx context.Context) {
		if !g.CancelOnLoss {
			return
		}
		// The work stops when the lease can no longer be proven, even
		// between steps; a plain Canceled is our own stop (pause, release).
		context.AfterFunc(ctx, func() {
			if cause := context.Cause(ctx); cause != context.Canceled {
				r.cancel(a, cause)
			}
		})
	}
	if g.OwnerCheck && g.CancelOnLoss {
		ctx, k := lockcore.Keep(r.ctx, a.lock, lockcore.KeeperOptions{Lease: r.liveLease(a), OnRenew: func(err error) {
			r.renewed(a, err, time.Time{})
		}})
		a.keeper, a.workCtx = k, ctx
		watch(ctx)
		return
	}
	ctx, cancel := context.WithCancelCause(r.ctx)
	a.workCtx = ctx
	watch(ctx)
	stop, done := make(chan struct{}), make(chan struct{})
	a.stopRenew, a.renewDone = stop, done
	if r.p.renewable {
		// Its first renewal (after a pause, a catch-up one at once) is
		// published before renewLoop runs, so a step due with it waits
		// for it (pendingLocked), as in the model.
		a.renewDue = a.renewedAt.Add(r.dur(r.p.renewEvery))
	}
	go r.renewLoop(a, ctx, cancel, stop, done)
}

// renewed records a renewal's outcome; at is its time on the model's clock
// (zero: lockcore's Keeper, on its own schedule: the send time, stamped).
func (r *liveRun) renewed(a *liveActor, err error, at time.Time) {
	if err == nil {
		r.mu.Lock()
		if a.grant != nil {
			a.grant.expires = a.lock.AcquiredAt.Add(a.lock.Lease)
			if at.IsZero() {
				at = r.stampLocked(a, a.lock.AcquiredAt, false)
			}
			a.renewedAt = at
			r.snapLocked(a.renewedAt, true, a.lock.Value(), a.grant.expires)
		}
		r.mu.Unlock()
		r.event(a.name, "renew", true, 0, "PEXPIRE "+fmtMS(r.p.lease))
		return
	}
	r.event(a.name, "renew", false, 0, err.Error())
}

// renewLoop renews on the policy's schedule, retrying failures; with
// cancel-on-loss it cancels the work when the lease can no longer be proven.
func (r *liveRun) renewLoop(a *liveActor, ctx context.Context, cancel context.CancelCauseFunc, stop, done chan struct{}) {
	defer close(done)
	defer r.locked(func() { a.renewDue = time.Time{} })
	// On the model's clock (as stamped), as the model's renewer: the budget
	// and the bound count from the grant, a renewal from the one before (or
	// from the wake-up it waited for), a failed one is retried after the
	// model's interval; and a renewal due at the instant of a step comes
	// first (pendingLocked).
	every, retry := r.dur(r.p.renewEvery), r.dur(r.p.retry)
	r.mu.Lock()
	origin := a.grant.modelAt
	next := a.renewedAt.Add(every)
	r.mu.Unlock()
	var budgetEnd, boundEnd time.Time // zero: none
	if r.p.budget > 0 {
		budgetEnd = origin.Add(r.dur(r.p.budget))
	}
	if r.p.bound > 0 {
		boundEnd = origin.Add(r.dur(r.p.bound))
	}
	for {
		wait := time.Hour
		if r.p.renewable {
			r.locked(func() { a.renewDue = next })
			wait = time.Until(next)
		}
		if r.sc.Guards.CancelOnLoss {
			wait = min(wait, time.Until(a.lock.ValidUntil()))
			if !budgetEnd.IsZero() {
				wait = min(wait, time.Until(budgetEnd))
			}
		}
		t := time.NewTimer(max(wait, 0))
		select {
		case <-stop:
			t.Stop()
			cancel(context.Canceled)
			return
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		now := time.Now()
		if r.sc.Guards.CancelOnLoss {
			if !budgetEnd.IsZero() && !now.Before(budgetEnd) {
				cancel(lockcore.ErrBudgetExceeded)
				return
			}
			if !now.Before(a.lock.ValidUntil()) {
				cancel(lockcore.ErrLeaseLost)
				return
			}
		}
		if !r.p.renewable || now.Before(next) {
			continue
		}
		// This renewal's time on the model's clock: when due, or now
		// (after a pause) when that is later by more than jitter. The
		// renewer runs on the model's clock, so its real time is that.
		at := next
		if now.Sub(next) > LiveTolerance {
			at = now
		}
		if !boundEnd.IsZero() && !at.Before(boundEnd) {
			r.event(a.name, "renew", false, 0, "renewal bound reached: renewals stop")
			if r.sc.Guards.CancelOnLoss {
				cancel(lockcore.ErrBoundReached)
			}
			return
		}
		switch r.renewOnce(a, partClient{UniversalClient: r.o.Client, r: r, a: a}, at) {
		case renewOK:
			next = at.Add(every)
		case renewRetry:
			next = at.Add(retry)
		case renewRefused:
			if r.sc.Guards.CancelOnLoss {
				cancel(lockcore.ErrLeaseLost)
			}
			return
		}
	}
}

type renewOutcome int

const (
	renewOK renewOutcome = iota
	renewRetry
	renewRefused
)

// renewOnce is one renewal: lockcore's owner-checked Renew, or a blind
// PEXPIRE (after a GET, only to see whose key it extends).
func (r *liveRun) renewOnce(a *liveActor, client partClient, at time.Time) renewOutcome {
	sent := time.Now()
	if r.sc.Guards.OwnerCheck {
		err := a.lock.Renew(r.ctx)
		switch {
		case err == nil:
			r.renewed(a, nil, at)
			return renewOK
		case errors.Is(err, lockcore.ErrNotHeld):
			r.event(a.name, "renew", false, 0, "refused: not owner or the key is gone")
			return renewRefused
		}
		r.event(a.name, "renew", false, 0, err.Error())
		return renewRetry
	}
	if r.partitioned(a) {
		r.event(a.name, "renew", false, 0, errPartitioned.Error())
		return renewRetry
	}
	v, _ := r.o.Client.Get(r.ctx, r.keys.Lock).Result()
	ok, err := r.o.Client.PExpire(r.ctx, r.keys.Lock, a.lock.Lease).Result()
	if err != nil {
		r.event(a.name, "renew", false, 0, err.Error())
		return renewRetry
	}
	if !ok {
		r.event(a.name, "renew", false, 0, "refused: the key is gone")
		return renewRefused
	}
	a.lock.AcquiredAt = sent
	if v != a.lock.Value() {
		if g := r.grantOf(v); g != nil {
			r.mu.Lock()
			g.expires = sent.Add(a.lock.Lease)
			r.snapLocked(at, true, v, g.expires)
			r.mu.Unlock()
			r.violate(CodeForeignRenew, a.name, fmt.Sprintf("%s's blind renewal extended %s's lock", a.name, g.actor))
		}
		r.event(a.name, "renew", true, 0, "blind PEXPIRE extended another holder's key")
		return renewOK
	}
	r.renewed(a, nil, at)
	return renewOK
}

// grantOf returns the grant whose lock value is value (its fence need not
// identify it: after a failover one can be issued twice), or nil; r.mu must
// not be held.
func (r *liveRun) grantOf(value string) *liveGrant {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.grantOfLocked(value)
}

func (r *liveRun) grantOfLocked(value string) *liveGrant {
	for _, g := range r.grants {
		if g.value == value {
			return g
		}
	}
	return nil
}

func (r *liveRun) stopRenewer(a *liveActor) {
	r.mu.Lock()
	k, stop, done := a.keeper, a.stopRenew, a.renewDone
	a.keeper, a.stopRenew, a.renewDone = nil, nil, nil
	r.mu.Unlock()
	if k != nil {
		k.Stop()
	}
	if stop != nil {
		close(stop)
		<-done
	}
}

func (r *liveRun) release(a *liveActor, client partClient) error {
	if a.lock == nil {
		r.event(a.name, "release", false, 0, "skipped: nothing to release")
		return nil
	}
	r.stopRenewer(a)
	r.endSection(a, time.Now())
	defer func() { a.lock = nil }()
	if r.sc.Guards.OwnerCheck {
		err := a.lock.Release(r.ctx)
		switch {
		case err == nil:
			r.released(a, a.lock.Value())
			r.event(a.name, "release", true, 0, "deleted its own key")
		case errors.Is(err, lockcore.ErrNotHeld):
			r.event(a.name, "release", false, 0, "refused: not owner or the key is gone")
		case errors.Is(err, errPartitioned):
			r.event(a.name, "release", false, 0, err.Error())
		default:
			return err
		}
		return nil
	}
	if r.partitioned(a) {
		r.event(a.name, "release", false, 0, errPartitioned.Error())
		return nil
	}
	v, _ := r.o.Client.Get(r.ctx, r.keys.Lock).Result()
	n, err := r.o.Client.Del(r.ctx, r.keys.Lock).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		r.event(a.name, "release", false, 0, "nothing to delete: the key is gone")
		return nil
	}
	r.released(a, v)
	if v != a.lock.Value() {
		if g := r.grantOf(v); g != nil {
			r.mu.Lock()
			g.lostAt = time.Now()
			r.mu.Unlock()
			r.violate(CodeForeignRelease, a.name, fmt.Sprintf("%s's blind DEL released %s's lock", a.name, g.actor))
		}
		r.event(a.name, "release", true, 0, "blind DEL deleted another holder's key")
		return nil
	}
	r.event(a.name, "release", true, 0, "deleted its own key")
	return nil
}

func (r *liveRun) cancel(a *liveActor, cause error) {
	r.mu.Lock()
	cancelled := r.cancelLocked(a)
	r.mu.Unlock()
	if cancelled {
		r.cancelled(a, cause)
	}
}

// cancelLocked ends a's critical section as cancelled and reports whether
// it did (false: not in one, or already cancelled); the caller records the
// event (cancelled) once r.mu is released. r.mu must be held.
func (r *liveRun) cancelLocked(a *liveActor) bool {
	if !a.inSection || a.cancelled {
		return false
	}
	a.cancelled = true
	r.endSectionLocked(a, time.Now())
	return true
}

// cancelled records the cancel event of a's work, for cause.
func (r *liveRun) cancelled(a *liveActor, cause error) {
	why := map[error]string{lockcore.ErrLeaseLost: "the lease can no longer be proven",
		lockcore.ErrBudgetExceeded: "the budget ended", lockcore.ErrBoundReached: "the renewal bound was reached"}[cause]
	r.event(a.name, "cancel", true, 0, "work cancelled: "+why)
}

func (r *liveRun) endSection(a *liveActor, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endSectionLocked(a, t)
}

func (r *liveRun) endSectionLocked(a *liveActor, t time.Time) {
	if !a.inSection {
		return
	}
	a.inSection = false
	a.sections = append(a.sections, liveSection{start: a.secStart, end: t, grant: a.grant})
}

// thaw ends a pause for a: at the wake-up, by whichever of the wake-up
// timer, the work and the next step runs first (so no work goes on before
// it), or, when a step was in flight, right after that step (so the write
// that was already past its checks reaches the store before the lease is
// found lost). The model does all of that at the wake-up instant, so here the
// pause counts until thaw runs: a starved goroutine or the in-flight step's
// round trip is not work after the lease. Then it restarts the renewer the
// pause stopped or, with cancel-on-loss and the lease run out, cancels the
// work at once, as the model does; a restarted renewer would cancel it too,
// but only after a goroutine hand-off that a loaded machine can stretch past
// LiveTolerance.
func (r *liveRun) thaw(a *liveActor, byProgram bool) {
	r.mu.Lock()
	if (!byProgram && a.inFlight) || time.Now().Before(a.pausedUntil) {
		r.mu.Unlock()
		return // the step in flight thaws; or a later pause is not over
	}
	a.inFlight = false
	if a.frozen {
		last := &a.pauses[len(a.pauses)-1]
		last[1] = maxTime(last[1], time.Now())
	}
	restart := a.frozen && a.inSection && !a.crashed && a.lock != nil
	a.frozen = false
	// In the same critical section as the end of the freeze, so that no
	// other process's step due at the wake-up (aheadLocked) runs between
	// them.
	cancelled := false
	switch {
	case !restart:
	case r.sc.Guards.CancelOnLoss && !time.Now().Before(a.lock.ValidUntil()):
		cancelled = r.cancelLocked(a)
	default:
		r.startRenewerLocked(a)
	}
	r.mu.Unlock()
	if cancelled {
		r.cancelled(a, lockcore.ErrLeaseLost)
	}
}

// awaitSteps waits until it is the fault f's turn (aheadLocked); it
// returns false when the run's context ends.
func (r *liveRun) awaitSteps(f liveStep) bool {
	return r.await(func() bool { return !r.aheadLocked(nil, r.real(f.AtMS), f.idx) })
}

// await polls cond, with r.mu held, every 50µs until it holds; it returns
// false when the run's context ends first.
func (r *liveRun) await(cond func() bool) bool {
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return true
		}
		if !r.sleepUntil(time.Now().Add(50 * time.Microsecond)) {
			return false
		}
	}
}

// aheadLocked reports whether something the model does before a step or
// fault due at t (model clock) and listed idx-th is still to come: a
// renewal or the end of a work or call due by t (pendingLocked), or the
// next step of another process than self that is ready to run it (not
// paused or crashed, not busy, not waiting to acquire), due before t, or at
// t and listed before idx. Steps are instants in the model, so such a step
// ends first. r.mu must be held.
func (r *liveRun) aheadLocked(self *liveActor, t time.Time, idx int) bool {
	if r.pendingLocked(t) {
		return true
	}
	now := time.Now()
	for _, b := range r.actors {
		if b == self || b.crashed {
			continue
		}
		// A wake-up due by t and not yet done (thaw): the model wakes a
		// process, restarts its renewer and fires its catch-up renewal
		// before the other steps of that instant. A step in flight at the
		// wake-up is its next step, ranked below.
		if b.frozen && !b.inFlight && !b.pausedUntil.After(t) {
			return true
		}
		if b.next >= len(b.steps) || b.blocking || now.Before(b.pausedUntil) {
			continue
		}
		if d := r.nextDueLocked(b); d.Before(t) || (d.Equal(t) && b.steps[b.next].idx < idx) {
			return true
		}
	}
	return false
}

// locked runs f with r.mu held.
func (r *liveRun) locked(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// pendingLocked reports whether a renewal or the end of a work or call, due
// at or before t (model clock), is still to come in a process that is not
// paused; r.mu must be held. In the model, both come before the steps and
// faults of their instant.
func (r *liveRun) pendingLocked(t time.Time) bool {
	due := func(at time.Time) bool { return !at.IsZero() && !at.After(t) }
	for _, b := range r.actors {
		if !b.crashed && !time.Now().Before(b.pausedUntil) && (due(b.renewDue) || due(b.busyUntil)) {
			return true
		}
	}
	return false
}

// waiterBeforeLocked reports whether a process before a in the model's
// order also waits to acquire and could be served now (not paused, crashed
// or partitioned): the model serves it first. r.mu must be held.
func (r *liveRun) waiterBeforeLocked(a *liveActor) bool {
	now := time.Now()
	for _, b := range r.actors {
		if b.rank < a.rank && b.waiting && !b.crashed && !now.Before(b.pausedUntil) && !now.Before(b.partUntil) {
			return true
		}
	}
	return false
}

// woke records a's wake-up event, once per pause, by whichever of its
// goroutines (the wake-up timer, the work, the step in flight) first finds
// the pause over: the event comes before anything a does after it.
func (r *liveRun) woke(a *liveActor) {
	r.mu.Lock()
	if a.woke || time.Now().Before(a.pausedUntil) {
		r.mu.Unlock()
		return
	}
	a.woke = true
	r.mu.Unlock()
	r.event(a.name, "wake", true, 0, a.name+" resumes where it froze")
}

// faults applies pauses, partitions, crashes, failovers and clock jumps at
// their times, each after the steps due before it (awaitSteps).
func (r *liveRun) faults(steps []liveStep, byName map[string]*liveActor) {
	var wakes sync.WaitGroup
	defer wakes.Wait()
	for _, st := range steps {
		if !r.sleepUntil(r.real(st.AtMS)) || !r.awaitSteps(st) {
			return
		}
		r.fault(st.Step, byName[st.Actor], &wakes)
		r.mu.Lock()
		r.applied++
		r.mu.Unlock()
	}
}

func (r *liveRun) fault(st Step, a *liveActor, wakes *sync.WaitGroup) {
	switch st.Do {
	case ActPause:
		// Times are the scheduled ones, so a pause that starts as another
		// ends is not taken for one inside it. Such a pause first waits for
		// the wake-up to be done, in-flight step included, as in the model;
		// a crashed process is not paused.
		start := r.real(st.AtMS)
		if !r.await(func() bool { return a.crashed || !(a.frozen && !start.Before(a.pausedUntil)) }) {
			return
		}
		r.mu.Lock()
		crashed := a.crashed
		r.mu.Unlock()
		if crashed {
			return
		}
		r.stopRenewer(a) // a frozen process renews nothing
		r.mu.Lock()
		// As in the model, a pause that comes during a pause adds to it;
		// the wake-up already waiting waits for the new end.
		nested := start.Before(a.pausedUntil)
		if nested {
			a.pausedUntil = a.pausedUntil.Add(r.dur(st.ForMS))
			a.pauses[len(a.pauses)-1][1] = a.pausedUntil
		} else {
			a.frozen, a.woke = a.inSection && a.lock != nil, false
			a.pauseStart, a.pausedUntil = start, start.Add(r.dur(st.ForMS))
			a.pauses = append(a.pauses, [2]time.Time{start, a.pausedUntil})
		}
		lock := a.lock
		r.mu.Unlock()
		if lock != nil && !nested {
			client := partClient{UniversalClient: r.o.Client, r: r, a: a}
			v, err := client.Get(r.ctx, r.keys.Lock).Result()
			r.mu.Lock()
			a.checkedOK = err == nil && v == lock.Value()
			r.mu.Unlock()
		}
		r.event(a.name, "pause", true, 0, "process frozen for "+fmtMS(st.ForMS))
		if nested {
			return
		}
		wakes.Go(func() {
			for {
				p, until := r.paused(a)
				if !p {
					break
				}
				if !r.sleepUntil(until) {
					return
				}
			}
			// A step due at the wake-up instant thaws after it runs.
			r.mu.Lock()
			if r.wakeInFlightLocked(a) {
				a.inFlight = true
			}
			r.mu.Unlock()
			r.woke(a)
			r.thaw(a, false)
		})
	case ActPartition:
		until := time.Now().Add(r.dur(st.ForMS))
		r.mu.Lock()
		a.partUntil = maxTime(a.partUntil, until)
		r.mu.Unlock()
		r.event(a.name, "partition", true, 0, "cut off from Redis for "+fmtMS(st.ForMS))
		wakes.Go(func() {
			if !r.sleepUntil(until) {
				return
			}
			r.mu.Lock()
			healed := a.partUntil.Equal(until) && !a.crashed // the partition that ends last
			r.mu.Unlock()
			if healed {
				r.event(a.name, "heal", true, 0, a.name+" can reach Redis again")
			}
		})
	case ActCrash:
		r.mu.Lock()
		crashed := a.crashed
		r.mu.Unlock()
		if crashed { // killed once
			return
		}
		r.stopRenewer(a)
		r.mu.Lock()
		a.crashed = true
		r.endSectionLocked(a, time.Now())
		r.mu.Unlock()
		r.event(a.name, "crash", true, 0, "process killed; its key stays until it expires")
	case ActFailover:
		r.failover(st)
	case ActClockJump:
		pttl, _ := r.o.Client.PTTL(r.ctx, r.keys.Lock).Result()
		v, _ := r.o.Client.Get(r.ctx, r.keys.Lock).Result()
		left := pttl - r.dur(st.ByMS)
		if left > 0 {
			r.o.Client.PExpire(r.ctx, r.keys.Lock, left)
		} else {
			r.o.Client.Del(r.ctx, r.keys.Lock)
		}
		r.mu.Lock()
		r.jumped += r.dur(st.ByMS)
		if g := r.grantOfLocked(v); g != nil && pttl > 0 {
			g.expires = time.Now().Add(max(left, 0))
			r.snapLocked(r.real(st.AtMS), left > 0, v, g.expires)
		}
		r.mu.Unlock()
		r.event(serverActor, "clock_jump", true, 0, "emulated: the key's TTL is cut by "+fmtMS(st.ByMS))
	}
}

// released records that a's release step deleted the key, which held v.
func (r *liveRun) released(a *liveActor, v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v == a.lock.Value() {
		a.grant.releasedAt = time.Now()
	}
	r.snapLocked(a.stepAt, false, "", time.Time{})
}

// snapLocked records the lock state as of at (a failover restores it); r.mu
// must be held.
func (r *liveRun) snapLocked(at time.Time, present bool, value string, expires time.Time) {
	if r.failovers {
		r.snaps = append(r.snaps, liveSnap{at: at, present: present, value: value, expires: expires, counter: r.counter, jumped: r.jumped})
	}
}

// stampLocked is when a change a made at t counts as made on the model's
// clock (in real time): for failover snapshots (compared with the
// failover's time less the replication lag), the grant and renewal times
// renewLoop counts from, and the end of cancelled work. It is the step's
// time (stepAt) for a change its step made at once (byStep), else t less
// the scheduling jitter a's steps have gathered, which the model does not
// have. r.mu must be held.
func (r *liveRun) stampLocked(a *liveActor, t time.Time, byStep bool) time.Time {
	if byStep {
		return a.stepAt
	}
	return t.Add(-(a.shift - a.modelShift))
}

// failover emulates a replica's promotion on the one server: as in the
// model, the lock and fence counter go back to what the run had written one
// replication lag (default 1 s) ago, the counter only with the fence in
// Redis (fence_source redis). A lock acquired or renewed since is lost, and
// a later acquire may get a fence already issued (FENCE_BACKWARDS).
func (r *liveRun) failover(st Step) {
	lag := r.sc.ReplicationLagMS
	if lag <= 0 {
		lag = 1000
	}
	// On the model's clock: the snapshot at or last before the cut.
	at := r.real(st.AtMS)
	cut := at.Add(-r.dur(lag))
	r.mu.Lock()
	restored := r.snaps[0]
	for _, sn := range r.snaps {
		if !sn.at.After(cut) && !sn.at.Before(restored.at) {
			restored = sn
		}
	}
	// The jumps since the snapshot moved the server's clock on.
	restored.expires = restored.expires.Add(-(r.jumped - restored.jumped))
	restored.jumped = r.jumped
	r.mu.Unlock()
	now := time.Now()
	present := restored.present && restored.expires.After(now)
	value, pttl, counterArg := "", int64(0), ""
	if present {
		value, pttl = restored.value, max(restored.expires.Sub(now).Milliseconds(), 1)
	}
	durable := r.sc.FenceSource == FenceStore
	if !durable {
		counterArg = strconv.FormatInt(restored.counter, 10)
	}
	v, err := failoverScript.Run(r.ctx, r.o.Client, []string{r.keys.Lock, r.keys.Fence}, value, pttl, counterArg).Text()
	if err != nil && !errors.Is(err, redis.Nil) {
		r.event(serverActor, "failover", false, 0, "emulation failed: "+err.Error())
		return
	}
	lost := ""
	r.mu.Lock()
	if g := r.grantOfLocked(v); g != nil && (!present || restored.value != v) {
		g.lostAt = now
		lost = g.actor + "'s lock"
	}
	if g := r.grantOfLocked(restored.value); present && g != nil {
		// Its own key put back with an older TTL ends it sooner.
		if restored.value != v {
			if !g.lostAt.IsZero() {
				g.gaps = append(g.gaps, [2]time.Time{g.lostAt, now})
			}
			g.lostAt, g.releasedAt = time.Time{}, time.Time{}
		}
		g.expires = restored.expires
	}
	if !durable {
		r.counter = restored.counter
	}
	r.snapLocked(at, present, restored.value, restored.expires)
	counter := r.counter
	r.mu.Unlock()
	note := "emulated: writes of the last " + fmtMS(lag) + " are lost"
	if lost != "" {
		note += ": " + lost
	}
	if durable {
		note += "; the fence counter is durable"
	} else {
		note += "; the fence counter is back at " + strconv.FormatInt(counter, 10)
	}
	r.event(serverActor, "failover", true, 0, note)
}

// result checks the invariants over the observed intervals: OVERLAP and
// LOCK_LOST_WHILE_WORKING (longer than LiveTolerance), with the violations
// recorded as they happened.
func (r *liveRun) result() LiveResult {
	res := LiveResult{Prefix: r.o.Prefix, TimeScale: r.o.TimeScale, Events: r.events, Violations: r.viol}
	// A key that ran out of TTL, neither released nor deleted by another
	// first: Redis expired it (the run did not watch). One still held at the
	// end (a crashed holder's) expires when its TTL runs out, as in the
	// model, though the run deletes it before that.
	for _, g := range r.grants {
		gone := func(t time.Time) bool { return !t.IsZero() && !t.After(g.expires) }
		if gone(g.releasedAt) || gone(g.lostAt) {
			continue
		}
		note := g.actor + "'s key expired on the server's clock: the lock is free; " + g.actor + " is not told"
		if !g.expires.Before(r.end) {
			note = g.actor + "'s key expires on the server's clock when its TTL left at the end of the run runs out (the run deletes it at its end): the lock is free; " + g.actor + " is not told"
		}
		res.Events = append(res.Events, Event{AtMS: r.virtual(g.expires), Actor: serverActor, Kind: "expire", OK: true, Note: note})
	}
	type span struct {
		from, to time.Time
		actor    string
		grant    *liveGrant
	}
	var active []span
	for _, a := range r.actors {
		for _, s := range a.sections {
			for _, piece := range cutPauses(s.start, s.end, a.pauses) {
				active = append(active, span{piece[0], piece[1], a.name, s.grant})
			}
		}
	}
	for _, s := range active {
		// Without the lease: in a gap a failover closed, or after its end.
		for _, off := range append(slices.Clone(s.grant.gaps), [2]time.Time{s.grant.end(), s.to}) {
			from, to := maxTime(off[0], s.from), minTime(off[1], s.to)
			if to.Sub(from) > LiveTolerance {
				res.Violations = append(res.Violations, Violation{Code: CodeLockLost, AtMS: r.virtual(from), Actor: s.actor,
					Message: fmt.Sprintf("%s kept working %s–%s after its lease ended", s.actor, fmtMS(r.virtual(from)), fmtMS(r.virtual(to)))})
				break
			}
		}
	}
	for i, x := range active {
		for _, y := range active[i+1:] {
			if x.actor == y.actor {
				continue
			}
			from, to := maxTime(x.from, y.from), minTime(x.to, y.to)
			if to.Sub(from) > LiveTolerance {
				first, second := x.actor, y.actor
				if y.from.Before(x.from) {
					first, second = second, first
				}
				res.Violations = append(res.Violations, Violation{Code: CodeOverlap, AtMS: r.virtual(from), Actor: second,
					Message: fmt.Sprintf("%s and %s both in the critical section %s–%s", first, second, fmtMS(r.virtual(from)), fmtMS(r.virtual(to)))})
			}
		}
	}
	slices.SortStableFunc(res.Violations, func(a, b Violation) int { return int(a.AtMS - b.AtMS) })
	slices.SortStableFunc(res.Events, func(a, b Event) int { return int(a.AtMS - b.AtMS) })
	if res.Violations == nil {
		res.Violations = []Violation{}
	}
	if res.Events == nil {
		res.Events = []Event{}
	}
	res.Verdict = VerdictSafe
	if len(res.Violations) > 0 {
		res.Verdict = VerdictUnsafe
	}
	return res
}

func cutPauses(from, to time.Time, pauses [][2]time.Time) [][2]time.Time {
	out := [][2]time.Time{{from, to}}
	for _, p := range pauses {
		var next [][2]time.Time
		for _, s := range out {
			if !p[0].Before(s[1]) || !p[1].After(s[0]) {
				next = append(next, s)
				continue
			}
			if p[0].After(s[0]) {
				next = append(next, [2]time.Time{s[0], p[0]})
			}
			if p[1].Before(s[1]) {
				next = append(next, [2]time.Time{p[1], s[1]})
			}
		}
		out = next
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
