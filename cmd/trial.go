package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/internal/contain"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/lockctl/lockctl/trial"
	"github.com/lockctl/lockctl/trial/storeapi"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// trialFormats are trial's -o formats.
var trialFormats = []string{formatTable, formatJSON, formatYAML, formatMermaid, formatJUnit, formatHTML}

// TrialOptions are the inputs of `lockctl trial`.
type TrialOptions struct {
	Printer *Printer
	ErrOut  io.Writer
	Ctx     context.Context
	// Trial is the first run's options; Runs more run with the next seeds.
	Trial trial.Options
	Runs  int
	// Expect is "", "safe" or "unsafe": exit 1 when the verdict differs.
	Expect string
	// Conn connects to the --redis server (nil: a scratch redis-server).
	Conn func() (*RedisConn, error)
	// Store is the --store database, created afresh for each run (nil: none).
	Store *trialStore
	// Cleanup only drops what killed trials left (--cleanup), running none.
	Cleanup bool
	// Progress is stderr when it is a terminal and --quiet is not given
	// (a live line per run), else nil.
	Progress io.Writer
}

// trialFlags are the values of trial's flags.
type trialFlags struct {
	workers, runs                  int
	duration, faultDuration, grace string
	nemeses                        []string
	seed                           uint64
	lockPattern, expect, contain   string
	yes, keep, failFast, cleanup   bool
	quiet                          bool
	store, schema, history, check  string
	queryTimeout                   string
}

const trialLong = `Put your own worker through faults against a real Redis and judge what it did.

lockctl starts --workers copies of COMMAND (no shell), each in a process tree
held as a whole (a cgroup of its own, else as lockctl's adopted children:
--containment), with REDIS_URL (its own loopback proxy to Redis),
LOCKCTL_TRIAL_WORKER (1..N) and LOCKCTL_TRIAL_SEED in its environment, and
starts each again when it exits or is killed, until --duration ends; then
SIGTERM, and SIGKILL after --grace. Meanwhile a nemesis injects faults on a
schedule drawn from --seed:

  pause      freeze (or SIGSTOP) the whole tree of the worker holding a
             --lock-pattern key (else a random one) for --fault-duration,
             then thaw it: the GC pause
  kill       SIGKILL its whole tree; it is started again
  partition  its Redis traffic stalls for --fault-duration (its proxy holds it)
  expire     PEXPIRE a held --lock-pattern key to 1ms: an early expiry
  restart    restart the scratch redis-server empty (not with --redis)

Judged: the client history (JSON lines workers print on stdout:
{"op":"invoke"|"ok"|"fail","resource":...,"fence":...,"key":...,"seq":...}):
an ok write with a fence below one committed before it (by seq, the commit
order the write returned, else one that had returned before it was invoked)
is ` + history.CodeStaleWrite + `, a repeated key ` + history.CodeDuplicate + `; writes that
report the value they read ("read") and wrote ("value") are checked with
Porcupine as one register per resource: no order of them is
` + history.CodeNotLinearizable + ` (a lost update), with the smallest failing part; and the lock
timeline sampled from the --lock-pattern keys as watch does
(` + history.CodeFenceBackwards + `). With --store, a scratch database (postgres://, mysql://
or sqlite:PATH) created for the run, given to the workers as DATABASE_URL
and dropped at the end: --history SQL (the committed writes with columns
fence and key) and --check SQL (rows that break your invariant:
` + history.CodeInvariant + `). The verdict is safe or unsafe, as simulate's, or
inconclusive when nothing was seen to judge (no worker started, or no
operation and no lock event): it never passes --expect safe.

By default Redis is a scratch redis-server lockctl starts on a free loopback
port and stops at the end. --redis URL uses that server instead and WRITES to
it (the workers, the expire nemesis), so it needs --yes. Keys without a TTL
are taken for counters, not locks. Each start drops the scratch state of
trials whose lockctl was killed (--cleanup does only that). -o html writes
one self-contained page (no request of any kind): the workers' swimlanes,
faults, violations and each lost update's failing part, drawn and in
Porcupine's own view. docs/trial.md has the whole story.`

const trialExample = `  lockctl trial -- ./worker.sh
  lockctl trial --workers 3 --duration 20s --nemesis pause --fault-duration 3s \
    --seed 7 -- python3 worker.py
  lockctl trial --runs 10 --expect safe -o junit -- ./worker.sh > trial.xml
  lockctl trial --nemesis pause -o html -- ./worker.sh > trial.html
  lockctl trial --store sqlite:/tmp --schema schema.sql \
    --history 'SELECT fence, key FROM writes ORDER BY id' -- ./worker.sh
  lockctl trial --redis redis://127.0.0.1:6380/0 --yes -- ./worker.sh
  lockctl trial --cleanup --store postgres://postgres@127.0.0.1/postgres`

// NewCmdTrial returns `lockctl trial`; runF replaces the run function in tests.
func NewCmdTrial(f *Factory, runF func(*TrialOptions) error) *cobra.Command {
	v := &trialFlags{}
	cmd := &cobra.Command{
		Use:         "trial [flags] -- COMMAND [ARGS...]",
		Annotations: outputFormats(trialFormats),
		Short:       "Run your worker under faults, judge its history (writes to Redis)",
		Long:        trialLong,
		Example:     trialExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := v.options(f, cmd, args)
			if err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.Store != nil && !storeapi.Linked() {
				return handOver(f, storeBinary, "trial --store")
			}
			return trialRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&v.workers, "workers", trial.DefaultWorkers, "copies of COMMAND run at once")
	fl.StringVar(&v.duration, "duration", "30s", "how long the workers run and faults are injected")
	fl.StringVar(&v.grace, "grace", "5s", "time between SIGTERM and SIGKILL at the end")
	fl.StringSliceVar(&v.nemeses, "nemesis", trial.DefaultNemeses, "faults to inject: pause, kill, partition, expire, restart (scratch Redis only), or none")
	fl.StringVar(&v.faultDuration, "fault-duration", "5s", "how long a pause or partition lasts (make it longer than your lease)")
	fl.Uint64Var(&v.seed, "seed", 0, "seed of the fault schedule (default: from the clock, printed in the result)")
	fl.IntVar(&v.runs, "runs", 1, "run the trial this many times with seeds S, S+1, ... and stop at the first unsafe one")
	fl.StringVar(&v.lockPattern, "lock-pattern", trial.DefaultLockPattern, "Redis glob of the lock keys: the timeline, the pause target, the expire nemesis")
	fl.BoolVar(&v.failFast, "fail-fast", false, "end a run at the first violation the workers' history shows (the time to a counterexample)")
	fl.StringVar(&v.expect, "expect", "", "exit 1 unless the verdict is this: safe or unsafe (for CI)")
	fl.BoolVar(&v.yes, "yes", false, "allow writing to the --redis server (the workers and the nemesis write to it)")
	fl.StringVar(&v.store, "store", "", "scratch database for the workers: postgres://..., mysql://... or sqlite:PATH (DATABASE_URL; its password in LOCKCTL_STORE_PASSWORD)")
	fl.StringVar(&v.schema, "schema", "", "SQL file run on the scratch database before the workers start")
	fl.StringVar(&v.history, "history", "", "SQL returning the committed writes in commit order: columns fence and key (nullable), optionally resource")
	fl.StringVar(&v.check, "check", "", "SQL returning the rows that break your invariant")
	fl.BoolVar(&v.keep, "keep", false, "keep the scratch database and print its name")
	fl.StringVar(&v.queryTimeout, "query-timeout", "60s", "time the --history and --check queries may take, before the workers start and after they stop")
	fl.StringVar(&v.contain, "containment", "auto", "how each worker's process tree is held: auto (cgroup where one can be made, else subreaper), cgroup or subreaper (Linux)")
	fl.BoolVar(&v.cleanup, "cleanup", false, "run no trial: drop the scratch state (Redis directories, cgroups, --store databases) of killed trials and list it")
	addQuietFlag(cmd, &v.quiet)
	_ = cmd.RegisterFlagCompletionFunc("expect", cobra.FixedCompletions([]string{history.VerdictSafe, history.VerdictUnsafe}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("nemesis", cobra.FixedCompletions(append(trial.FaultKinds, "none"), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// options checks the flags and the command (exit 2 on bad input).
func (v *trialFlags) options(f *Factory, cmd *cobra.Command, args []string) (*TrialOptions, error) {
	format, err := f.Output(trialFormats...)
	if err != nil {
		return nil, err
	}
	if v.cleanup {
		return v.cleanupOptions(f, cmd, args, format)
	}
	dash := cmd.ArgsLenAtDash()
	if dash < 0 || dash > 0 || len(args) == 0 {
		return nil, usageErrorf("give the worker's command after --, e.g. lockctl trial -- ./worker.sh")
	}
	o := trial.Options{Command: args, Workers: v.workers, Seed: v.seed, LockPattern: v.lockPattern, FailFast: v.failFast, Env: childEnv(os.Environ(), false)}
	if v.workers < 1 || v.workers > 64 {
		return nil, usageErrorf("workers %d must be from 1 to 64", v.workers)
	}
	if v.runs < 1 {
		return nil, usageErrorf("runs %d must be at least 1", v.runs)
	}
	for _, d := range []struct {
		name, value string
		to          *time.Duration
	}{{"duration", v.duration, &o.Duration}, {"fault-duration", v.faultDuration, &o.FaultDuration}, {"grace", v.grace, &o.Grace}} {
		if *d.to, err = lockcore.ParsePositiveDuration(d.value); err != nil {
			return nil, usageErrorf("%s %s", d.name, err)
		}
	}
	if cmd.Flags().Changed("fault-duration") && o.FaultDuration > o.Duration {
		return nil, usageErrorf("fault-duration %s must not be longer than --duration %s: a pause or partition would outlast the run", v.faultDuration, v.duration)
	}
	if o.Nemeses, err = trial.ParseNemeses(v.nemeses); err != nil {
		return nil, usageErrorf("%v", err)
	}
	if v.lockPattern == "" {
		return nil, emptyFlagError("lock-pattern")
	}
	if err := choice("containment", v.contain, "auto", contain.ModeCgroup, contain.ModeSubreaper); err != nil {
		return nil, err
	}
	if v.contain != "auto" {
		o.Containment = v.contain
	}
	if err := checkGlob("lock-pattern", v.lockPattern); err != nil {
		return nil, err
	}
	if !cmd.Flags().Changed("seed") {
		o.Seed = uint64(time.Now().UnixNano() % 1_000_000)
	}
	opts := &TrialOptions{Printer: f.newPrinter(format), ErrOut: f.IO.ErrOut, Ctx: cmd.Context(), Trial: o, Runs: v.runs}
	if f.IO.ErrTTY && !v.quiet {
		opts.Progress = f.IO.ErrOut
	}
	if v.expect != "" {
		if err := choice("expect", v.expect, history.VerdictSafe, history.VerdictUnsafe); err != nil {
			return nil, err
		}
		opts.Expect = v.expect
	}
	if err := v.storeFlags(f, cmd, opts); err != nil {
		return nil, err
	}
	if cmd.Flags().Changed("redis") {
		if err := v.givenRedis(f, cmd, opts); err != nil {
			return nil, err
		}
	}
	return opts, nil
}

// givenRedis checks --redis for a trial: --yes, one server over plain TCP
// (each worker reaches it through a loopback proxy), no restart nemesis.
func (v *trialFlags) givenRedis(f *Factory, cmd *cobra.Command, opts *TrialOptions) error {
	raw, _ := cmd.Flags().GetString("redis")
	if !v.yes {
		return usageErrorf("--redis %s: a trial writes to that server (the workers, the expire nemesis); add --yes, or drop --redis for a scratch redis-server", RedactURL(raw))
	}
	u, err := redis.ParseURL(raw)
	if err != nil || !strings.HasPrefix(raw, "redis://") {
		return usageErrorf("--redis %s: a trial takes one server as redis://host:port/db (workers reach it through plain TCP proxies)", RedactURL(raw))
	}
	for _, n := range opts.Trial.Nemeses {
		if n == trial.FaultRestart {
			return usageErrorf("%v", trial.ErrRestartNeedsScratch)
		}
	}
	opts.Trial.Upstream, opts.Trial.RedisDB = u.Addr, u.DB
	opts.Conn = func() (*RedisConn, error) { return f.Redis(cmd.Context()) }
	return nil
}

func trialRun(opts *TrialOptions) error {
	if opts.Cleanup {
		return trialCleanup(opts)
	}
	o := opts.Trial
	if opts.Conn != nil {
		conn, err := opts.Conn()
		if err != nil {
			return err
		}
		defer conn.Close()
		if conn.Cluster {
			return usageErrorf("--redis %s is a cluster: a trial takes one server", conn.URL)
		}
		o.Redis = conn.Client
		// The proxies authenticate for the workers: the password stays out of their environment.
		if c, ok := conn.Client.(*redis.Client); ok && c.Options().Password != "" {
			o.UpstreamAuth = []string{"AUTH", c.Options().Password}
			if u := c.Options().Username; u != "" {
				o.UpstreamAuth = []string{"AUTH", u, c.Options().Password}
			}
		}
	}
	var res trial.Result
	var summaries []trial.RunSummary
	var err error
	for i := range opts.Runs {
		o.Seed = opts.Trial.Seed + uint64(i)
		stop := func() {}
		if opts.Progress != nil {
			run := ""
			if opts.Runs > 1 {
				run = fmt.Sprintf("run %d/%d ", i+1, opts.Runs)
			}
			o.Progress, stop = trialProgress(opts.Progress, run)
		}
		res, err = trialOnce(opts, o, i == 0)
		stop()
		if err != nil && !res.Interrupted {
			return trialError(err)
		}
		summaries = append(summaries, trial.RunSummary{Seed: o.Seed, Verdict: res.Verdict, Violations: len(res.Violations), DurationMS: res.DurationMS})
		if opts.Runs > 1 {
			fmt.Fprintf(opts.ErrOut, "lockctl: trial run %d/%d, seed %d: %s\n", i+1, opts.Runs, o.Seed, res.Verdict)
		}
		if res.Verdict == history.VerdictUnsafe || err != nil {
			break
		}
	}
	if opts.Runs > 1 {
		res.Runs = summaries
		if res.Verdict == history.VerdictUnsafe {
			res.CounterexampleSeed = &res.Seed
		}
	}
	if perr := printTrial(opts.Printer, res); perr != nil {
		return perr
	}
	if err != nil {
		return err // interrupted: execute says so and exits 130
	}
	if opts.Expect != "" && opts.Expect != res.Verdict {
		fmt.Fprintln(opts.ErrOut, expectMissed(opts.Expect, res))
	}
	return expectVerdict(opts.Expect, res.Verdict)
}

// expectMissed is the line on stderr when the verdict is not --expect's:
// the output may have gone to a file (-o junit > trial.xml), and an
// inconclusive verdict's reason is the one note that starts with it.
func expectMissed(expect string, res trial.Result) string {
	line := fmt.Sprintf("lockctl: the verdict is %s, not %s (--expect %s)", res.Verdict, expect, expect)
	if res.Verdict != history.VerdictInconclusive {
		return line
	}
	for _, n := range res.Notes {
		if why, ok := strings.CutPrefix(n, history.VerdictInconclusive+": "); ok {
			return line + ": " + why
		}
	}
	return line
}

// trialOnce runs one trial, in a scratch database of its own with --store;
// the first also drops what killed trials left, once the --store server
// answered (a server that cannot be reached is Open's error alone).
func trialOnce(opts *TrialOptions, o trial.Options, first bool) (trial.Result, error) {
	if opts.Store == nil {
		if first {
			dropOrphans(opts)
		}
		return trial.Run(opts.Ctx, o)
	}
	drop, rep, err := opts.Store.open(opts.Ctx, &o, opts.ErrOut)
	if err != nil {
		return trial.Result{}, err
	}
	defer drop()
	if first {
		dropOrphans(opts)
	}
	res, err := trial.Run(opts.Ctx, o)
	res.Store = rep
	if n := opts.Store.judgeNote; n != "" {
		res.Notes = append(res.Notes, n)
	}
	return res, err
}

// trialError maps Run's errors to exit codes: 127 for a command that cannot
// start, 3 for a scratch Redis that cannot, 2 for the rest.
func trialError(err error) error {
	var se *trial.StartError
	switch {
	case errors.As(err, &se):
		return &ExitError{Code: ExitCannotRun, Err: err}
	case errors.Is(err, trial.ErrNoRedisServer):
		return &ExitError{Code: ExitRedis, Err: err}
	case errors.As(err, new(*ExitError)), errors.Is(err, context.Canceled):
		return err
	}
	return &ExitError{Code: ExitUsage, Err: err}
}
