// Package trial puts a team's own worker through faults: several copies of
// a command against a real Redis (each through a loopback proxy of its own),
// a nemesis that pauses, kills, partitions, expires locks early and
// restarts Redis on a seeded schedule, and a checker that judges what the
// workers reported (their client history), what a scratch database kept
// (through Options.Judge) and the lock timeline sampled as watch does.
// It never prints: Run returns a Result (docs/trial.md).
package trial

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/contain"
	"github.com/lockctl/lockctl/internal/redisproc"
	"github.com/redis/go-redis/v9"
)

// Defaults of the options (docs/trial.md).
const (
	DefaultWorkers       = 3
	DefaultDuration      = 30 * time.Second
	DefaultFaultDuration = 5 * time.Second
	DefaultGrace         = 5 * time.Second
	DefaultLockPattern   = "lock:*"
	DefaultSampleEvery   = 20 * time.Millisecond
)

// DefaultNemeses is --nemesis's default: restart needs the scratch server.
var DefaultNemeses = []string{FaultPause, FaultKill, FaultPartition, FaultExpire}

// Options are the inputs of one trial. Durations are time.Duration; a zero
// one takes its default.
type Options struct {
	// Command is COMMAND [ARGS...], run without a shell.
	Command []string
	Workers int
	// Duration is how long workers run (and are restarted) before the stop.
	Duration time.Duration
	// Grace is the time between SIGTERM and SIGKILL at the stop.
	Grace         time.Duration
	Seed          uint64
	Nemeses       []string
	FaultDuration time.Duration
	// LockPattern is the Redis glob of the lock keys (timeline, targets, expire).
	LockPattern string
	// Redis is the server to use (the user's --redis, with --yes); nil: a
	// scratch redis-server. Upstream is its host:port for the proxies and
	// RedisDB its database number.
	Redis    redis.UniversalClient
	Upstream string
	RedisDB  int
	// UpstreamAuth is the AUTH command ("AUTH", [user,] password) each
	// proxy sends on its upstream connection first, so that workers reach a
	// server with a password without having it; nil: none.
	UpstreamAuth []string
	// Env is the workers' base environment (without lockctl's secrets);
	// Dir their working directory ("" the current one).
	Env []string
	Dir string
	// DatabaseURL is handed to the workers as DATABASE_URL when set.
	DatabaseURL string
	// Judge, when set, judges the scratch database after the workers
	// stopped (--history, --check); its violations get Source "store" and
	// the trial's end as their time.
	Judge func(ctx context.Context) ([]Violation, error)
	// JudgeTimeout bounds Judge (0: DefaultJudgeTimeout).
	JudgeTimeout time.Duration
	SampleEvery  time.Duration
	// FailFast ends the run at the first violation the client history
	// shows, instead of at Duration: what a time-to-counterexample
	// measurement and a --runs search want.
	FailFast bool
	// Containment is how each worker's tree is held (internal/contain's
	// modes); "": the best this system has.
	Containment string
	// Progress, when set, is called every ProgressEvery from another
	// goroutine until Run returns (a live display: cmd/trial.go).
	Progress func(Progress)
}

func (o *Options) defaults() {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Duration <= 0 {
		o.Duration = DefaultDuration
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.FaultDuration <= 0 {
		o.FaultDuration = DefaultFaultDuration
	}
	if o.LockPattern == "" {
		o.LockPattern = DefaultLockPattern
	}
	if o.JudgeTimeout <= 0 {
		o.JudgeTimeout = DefaultJudgeTimeout
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = DefaultSampleEvery
	}
	if o.Nemeses == nil {
		o.Nemeses = DefaultNemeses
	}
}

// failFastEvery spaces FailFast's judgements of the growing history.
const failFastEvery = 50 * time.Millisecond

// ErrRestartNeedsScratch: the restart nemesis empties the server; lockctl
// does that only to the scratch one it started.
var ErrRestartNeedsScratch = errors.New("nemesis restart empties Redis: only with the scratch server (drop --redis or drop restart)")

// trial is the state of one run.
type trial struct {
	opts    Options
	start   time.Time
	client  redis.UniversalClient
	scratch *redisproc.Server
	set     *contain.Set
	trees   []*contain.Tree // one per worker slot
	proxies []*proxy
	workers []*worker
	owners  *owners
	sampler *sampler
	lanes   *laneRecorder
	stopCh  chan struct{}
	// endEarly ends the run before its duration (FailFast); judgedAt is
	// when the history was last judged for it.
	endEarly context.CancelFunc
	judgedAt time.Time

	mu     sync.Mutex
	ops    []Op
	faults []Fault
	// opBytes is the resources' and keys' bytes in ops; droppedOps the
	// operations not kept once the history was full.
	opBytes, droppedOps int
	phase               string // a Phase* of the Progress snapshot
}

// Run runs one trial and returns its result. Bad options are errors before
// anything starts; a command that cannot be started is a *StartError;
// ErrNoRedisServer when the scratch server cannot be. When ctx is cancelled
// (Ctrl-C) the faults are healed first, the workers stopped and Redis
// stopped, and Run returns the partial result (Interrupted) with ctx's error.
func Run(ctx context.Context, o Options) (Result, error) {
	o.defaults()
	if err := ctx.Err(); err != nil {
		return Result{Interrupted: true}, err
	}
	if len(o.Command) == 0 {
		return Result{}, errors.New("no command to try: give it after --")
	}
	if _, err := exec.LookPath(o.Command[0]); err != nil {
		return Result{}, &StartError{Command: o.Command[0], Err: err}
	}
	if o.Redis != nil && slices.Contains(o.Nemeses, FaultRestart) {
		return Result{}, ErrRestartNeedsScratch
	}
	set, err := contain.New(o.Containment)
	if err != nil {
		return Result{}, err
	}
	defer set.Close() // after the workers' stop: whatever is left of their trees
	t := &trial{opts: o, client: o.Redis, stopCh: make(chan struct{}), owners: &owners{pattern: o.LockPattern, byToken: map[string]int{}}, set: set}
	upstream := o.Upstream
	if o.Redis == nil {
		s, err := startScratch(ctx)
		if err != nil {
			return Result{}, err
		}
		defer s.Stop()
		t.scratch, upstream = s, s.Addr
		c := redis.NewClient(&redis.Options{Addr: s.Addr})
		defer c.Close()
		t.client = c
	}
	for i := 1; i <= o.Workers; i++ {
		p, err := newProxy(i, upstream, o.UpstreamAuth, t.owners.observe)
		if err != nil {
			return Result{}, err
		}
		defer p.close()
		t.proxies = append(t.proxies, p)
		t.trees = append(t.trees, set.Tree("w"+strconv.Itoa(i)))
	}
	return t.run(ctx)
}

// run starts the sampler, the workers and the nemesis, stops them in that
// order's reverse after the duration (or ctx's end), and judges.
func (t *trial) run(ctx context.Context) (Result, error) {
	o := t.opts
	t.start, t.phase = time.Now(), PhaseRunning
	t.lanes = newLaneRecorder(t.start)
	t.sampler = &sampler{t: t, client: t.client, differs: map[string]*inspect.Differ{}, last: map[string]int{}, interval: o.SampleEvery,
		reader: &inspect.Reader{Light: true}}
	defer t.reportProgress()()
	sctx, stopSampler := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() { t.sampler.run(sctx); close(sampled) }()
	for i := 1; i <= o.Workers; i++ {
		w := &worker{id: i, t: t, done: make(chan struct{}), tree: t.trees[i-1],
			env: workerEnv(o.Env, i, o.Seed, redisURL(t.proxies[i-1].addr(), o.RedisDB), o.DatabaseURL)}
		t.workers = append(t.workers, w)
		go w.loop()
	}
	nctx, stopNemesis := context.WithTimeout(ctx, o.Duration)
	defer stopNemesis()
	t.mu.Lock()
	t.endEarly = stopNemesis
	t.mu.Unlock()
	healed := make(chan struct{})
	go func() {
		t.nemesis(nctx, schedule(o.Seed, o.Nemeses, o.FaultDuration, o.Duration, o.Workers))
		close(healed)
	}()
	<-nctx.Done()
	early := ctx.Err() == nil && time.Since(t.start) < o.Duration
	<-healed // the nemesis heals what it broke as its context ends
	for i, w := range t.workers {
		w.resume()
		t.proxies[i].heal()
	}
	close(t.stopCh)
	t.setPhase(PhaseStopping)
	var wg sync.WaitGroup
	for _, w := range t.workers {
		wg.Add(1)
		go func() { defer wg.Done(); w.stop(o.Grace) }()
	}
	wg.Wait()
	end := time.Since(t.start)
	stopSampler()
	<-sampled
	res := t.result(end)
	if early {
		res.Notes = append(res.Notes, "ended at the first violation (fail fast)")
	}
	if o.Judge != nil {
		judgedLate := ctx.Err() != nil
		t.setPhase(PhaseJudging)
		vs, err := judgeStore(ctx, o.Judge, o.JudgeTimeout)
		switch {
		case err != nil && !judgedLate && ctx.Err() != nil:
			res.Notes = append(res.Notes, "interrupted while judging the database: its history and check were not judged")
		case err != nil:
			return res, err
		}
		for i := range vs { // judged after the run: stamped with its end
			vs[i].Source, vs[i].AtMS = SourceStore, res.DurationMS
		}
		res.Violations = append(res.Violations, vs...)
	}
	res.Verdict, res.Notes = verdict(res), append(res.Notes, inconclusiveWhy(res)...)
	if err := ctx.Err(); err != nil {
		res.Interrupted = true
		res.Notes = append(res.Notes, "interrupted: the verdict covers the history up to the interruption")
		return res, err
	}
	return res, nil
}

// verdict is unsafe when a violation was found, else inconclusive when
// nothing was seen that could have shown one (inconclusiveWhy), else safe.
func verdict(res Result) string {
	switch {
	case len(res.Violations) > 0:
		return history.VerdictUnsafe
	case len(inconclusiveWhy(res)) > 0:
		return history.VerdictInconclusive
	}
	return history.VerdictSafe
}

// inconclusiveWhy says why res holds no evidence either way: no worker
// started (a bad #! line, a missing interpreter), or no client operation
// and no lock event was seen (workers that cannot reach Redis, or a
// --lock-pattern that matches none of their keys). Empty: there is some.
func inconclusiveWhy(res Result) []string {
	if len(res.Violations) > 0 {
		return nil
	}
	starts := 0
	var first string
	for _, r := range res.Reports {
		starts += r.Starts
		if first == "" && len(r.Exits) > 0 {
			first = r.Exits[0]
		}
	}
	switch {
	case starts == 0 && first != "":
		return []string{"inconclusive: no worker started (" + first + ")"}
	case starts == 0:
		return []string{"inconclusive: no worker started"}
	case res.Ops == 0 && len(res.Events) == 0:
		return []string{"inconclusive: no client operation and no lock event was seen: do the workers reach Redis, and does --lock-pattern match their keys?"}
	case res.Linearizable == LinearizableUnknown:
		// A check that ran out of time proved nothing either way: never "safe".
		return []string{"inconclusive: the linearizability check ran out of time"}
	}
	return nil
}

// DefaultJudgeTimeout bounds the database's history and check queries.
const DefaultJudgeTimeout = time.Minute

// judgeStore runs judge within timeout. A run already interrupted is
// still judged (its partial verdict); an interruption during the judging
// ends it, so Ctrl-C never waits on a slow query.
func judgeStore(ctx context.Context, judge func(context.Context) ([]Violation, error), timeout time.Duration) ([]Violation, error) {
	base := ctx
	if ctx.Err() != nil {
		base = context.WithoutCancel(ctx)
	}
	jctx, cancel := context.WithTimeout(base, timeout)
	defer cancel()
	vs, err := judge(jctx)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("%w (the history and check queries have %s)", err, timeout)
	}
	return vs, err
}

// result gathers the history, faults, timeline and lanes after the stop.
func (t *trial) result(end time.Duration) Result {
	o := t.opts
	t.mu.Lock()
	ops, faults, dropped := append([]Op(nil), t.ops...), append([]Fault{}, t.faults...), t.droppedOps
	t.mu.Unlock()
	res := Result{Seed: o.Seed, Workers: o.Workers, DurationMS: end.Milliseconds(), Command: o.Command, Nemeses: o.Nemeses,
		Faults: faults, Events: t.sampler.timeline(), Ops: len(ops), Lanes: t.lanes.lanes(o.Workers, end.Milliseconds()), Notes: []string{}}
	res.Containment = t.set.Mode()
	res.Redis = "scratch redis-server " + t.upstreamName()
	if t.scratch == nil {
		res.Redis = "given server " + o.Upstream
	}
	if why := t.sampler.blind(); why != "" {
		res.Partial, res.Notes = true, append(res.Notes, why)
	}
	res.Violations = judgeHistory(ops)
	lin := checkLinearizable(ops, linearizeTimeout)
	res.Violations, res.Linearizable = append(res.Violations, lin.violations...), lin.status
	if lin.note != "" {
		res.Notes = append(res.Notes, lin.note)
	}
	for _, e := range res.Events {
		if e.Event == inspect.EventFenceBackwards {
			res.Violations = append(res.Violations, Violation{Code: history.CodeFenceBackwards, At: e.At, AtMS: e.AtMS, Worker: e.Worker, Source: SourceLock, Fence: e.Fence, Detail: e.Key + ": " + e.Detail})
		}
	}
	sort.SliceStable(res.Violations, func(i, j int) bool { return res.Violations[i].AtMS < res.Violations[j].AtMS })
	markStale(res.Lanes, res.Violations)
	if res.Violations == nil {
		res.Violations = []Violation{}
	}
	for _, w := range t.workers {
		r := w.snapshot()
		res.Reports = append(res.Reports, r)
		if n := r.Failures; n >= 3 {
			note := fmt.Sprintf("worker %d failed %d times (last: %s)", r.Worker, n, r.Exits[len(r.Exits)-1])
			if len(r.LastErrs) > 0 {
				note += "; its stderr: " + r.LastErrs[len(r.LastErrs)-1]
			}
			res.Notes = append(res.Notes, note)
		}
		if r.BadLines > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("worker %d printed %d stdout lines starting with { that are no client operation (invalid JSON or op): passed over", r.Worker, r.BadLines))
		}
	}
	if dropped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("client history full at %d operations: %d later ones were dropped, not judged", len(ops), dropped))
	}
	if len(ops) == 0 && o.Judge == nil {
		res.Notes = append(res.Notes, "no client history: the workers printed no {\"op\":...} lines on stdout (docs/trial.md)")
	}
	return res
}

func (t *trial) upstreamName() string {
	if t.scratch != nil {
		return t.scratch.Addr
	}
	return t.opts.Upstream
}

// The client history kept is capped, so that a worker printing without
// end cannot grow lockctl without bound: at most maxOps operations and
// maxOpBytes of their resources, keys, reads and values; later ones are
// counted only.
const (
	maxOps     = 100_000
	maxOpBytes = 16 << 20
)

// addOp records an operation worker printed, stamped now; false when the
// history is full (maxOps, maxOpBytes) and op was dropped.
func (t *trial) addOp(worker int, op Op) bool {
	now := time.Now()
	op.Worker, op.at, op.AtMS = worker, now, now.Sub(t.start).Milliseconds()
	n := len(op.Resource) + len(op.Read) + len(op.Value) // the value is what checkLinearizable writes
	if op.Key != nil {
		n += len(*op.Key)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.ops) >= maxOps || t.opBytes+n > maxOpBytes {
		t.droppedOps++
		return false
	}
	t.opBytes += n
	if op.Op == OpOK {
		t.lanes.wrote(worker, op.AtMS)
	}
	t.ops = append(t.ops, op)
	// Judging is O(n log n) in the history: at most every failFastEvery.
	if t.opts.FailFast && op.Op == OpOK && t.endEarly != nil && now.Sub(t.judgedAt) >= failFastEvery {
		t.judgedAt = now
		if len(judgeHistory(t.ops)) > 0 {
			t.endEarly()
		}
	}
	return true
}

// redisURL is the URL a worker gets: its proxy, the database, no password.
func redisURL(addr string, db int) string {
	u := url.URL{Scheme: "redis", Host: addr, Path: "/" + strconv.Itoa(db)}
	return u.String()
}

// ParseNemeses reads --nemesis: a comma-separated list of FaultKinds, or
// "none". It returns an error naming the unknown word and the accepted ones.
func ParseNemeses(list []string) ([]string, error) {
	out := []string{}
	for _, n := range list {
		switch {
		case n == "none" && len(list) == 1:
			return out, nil
		case n == "none":
			return nil, fmt.Errorf("nemesis none cannot be combined with other faults (%s)", strings.Join(list, ","))
		case !slices.Contains(FaultKinds, n):
			return nil, fmt.Errorf("nemesis %q is not one of %s (or none)", n, strings.Join(FaultKinds, ", "))
		case !slices.Contains(out, n):
			out = append(out, n)
		}
	}
	return out, nil
}
