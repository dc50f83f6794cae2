package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/lockctl/lockctl/simulate"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const formatMermaid = "mermaid"

// SimulateOptions are the inputs of `lockctl simulate`.
type SimulateOptions struct {
	Printer *Printer
	// List describes the built-in scenarios instead of running one.
	List bool
	// Scenario is the scenario to run (built-in with overrides, or from --file).
	Scenario simulate.Scenario
	// Expect is "", "safe" or "unsafe": exit 1 when the verdict differs.
	Expect string
	// Explore searches the schedules around the scenario.
	Explore     bool
	ExploreOpts simulate.ExploreOptions
	// Ctx stops an exploration or a live run early (Ctrl-C).
	Ctx context.Context
	// Live runs the scenario against Redis too (--redis given).
	Live      bool
	TimeScale float64
	Prefix    string
	Conn      func() (*RedisConn, error)
	// Progress is stderr when it is a terminal and --quiet is not given
	// (an exploration's progress bar), else nil.
	Progress io.Writer
}

// simulateFlags are the values of simulate's flags.
type simulateFlags struct {
	list, explore, checkpoints, quiet      bool
	file, expect, fenceSource, check, mode string
	budget, lease, pause, renewEvery       string
	guards                                 map[string]*bool
	runs, grid                             int
	seed                                   uint64
	timeScale                              float64
	prefix                                 string
}

const simulateLong = `Replay a lock failure on a deterministic virtual clock (ms, no sleeping):
processes with a worker and a renewer, a lock service (SET NX PX, owner-checked
or blind renew/release, a fence counter, expiry on the server's clock,
failover, clock jumps) and a store that keeps the highest fencing token it has
seen. It reports every broken invariant (` + history.CodeStaleWrite + `, ` + history.CodeOverlap + `,
` + history.CodeForeignRelease + `, ` + history.CodeForeignRenew + `, ` + history.CodeLockLost + `, ` + history.CodeDuplicate + `,
` + history.CodeFenceBackwards + `), the verdict, and which guard saved, contained or would have
saved the run. Guards are on by default; switch one off with --fencing=false,
--owner-check=false, --cancel-on-loss=false or --idempotency-key=false.

The lock, the execution budget, the cancellation signal and the write
boundary are four different things: a vanished key does not stop the old
holder, and a pause can fall between its last check and its write reaching
the store (Kleppmann 2016), so only fencing at the store refuses that write.

Without --redis nothing touches Redis. With --redis URL the same scenario also
runs live with lockcore's scripts, real goroutines and a real fenced store,
its times multiplied by --time-scale. Live mode WRITES to that server, but
only four keys under its own prefix (--prefix, default
"lockctl:sim:{<random>}:"): lock, fence, store and receiver. It refuses to
start if one of them exists, and deletes those four when it ends.

A lease derived from a budget (crash-recovery, long-budget, --budget or
--mode, a file's policy.budget) follows the configured policy, as lockctl
lease does: lease cap, renewal bound and renewal interval from --lease-cap,
--renew-bound, LOCKCTL_POLICY_* or the config file's policy.* keys (defaults
60s, 12h, lease/3); --renew-every comes first. An explicit lease keeps its
numbers (--lease-cap and --renew-bound are refused beside it), and
so does what a file's policy sets itself: stale-writer, unsafe-release,
renewal-loss, duplicate-delivery, failover and clock-jump replay fixed
incidents and ignore the policy settings.

A scenario of nodes: N (a file's, or a redlock-* built-in's) takes the lock
on N independent Redis nodes as Redlock does: SET NX PX on each, a majority
within the validity time (lease - elapsed - drift). Node faults take node: K
or nodes: [..]. Redlock issues no fencing token: --fencing models one durable
counter at the store, and --fence-source redis is refused.

Scenario files (--file) follow the schema printed by 'lockctl simulate schema'.

-o html writes one self-contained page (no request of any kind) with the
swimlanes, faults, fences, violations and timeline, to attach to an incident
review; -o mermaid a sequence diagram.`

const simulateExample = `  lockctl simulate --list
  lockctl simulate stale-writer
  lockctl simulate stale-writer --fencing=false --check ttl
  lockctl simulate crash-recovery --mode ordinary -o json
  lockctl simulate failover --fence-source store -o mermaid
  lockctl simulate stale-writer --fencing=false -o html > stale-writer.html
  lockctl simulate redlock-clock-jump --fencing
  lockctl simulate --file incident.yaml --expect safe
  lockctl simulate renewal-loss --cancel-on-loss=false --explore \
    --runs 10000 --seed 7
  lockctl simulate unsafe-release --redis redis://127.0.0.1:6379/0 \
    --time-scale 0.01`

// NewCmdSimulate returns `lockctl simulate`; runF replaces the run function in tests.
func NewCmdSimulate(f *Factory, runF func(*SimulateOptions) error) *cobra.Command {
	v := &simulateFlags{guards: map[string]*bool{}}
	cmd := &cobra.Command{
		Use:               "simulate [SCENARIO] [flags]",
		Annotations:       outputFormats(simulateFormats),
		Short:             "Replay lock failures on a virtual clock, or against a real Redis",
		Long:              simulateLong,
		Example:           simulateExample,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeScenarios,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := v.options(f, cmd, args)
			if err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return simulateRun(opts)
		},
	}
	cmd.AddCommand(newCmdSimulateSchema(f))
	v.register(cmd)
	return cmd
}

// register declares simulate's flags on cmd, with completion of their words.
func (v *simulateFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&v.list, "list", false, "describe the built-in scenarios")
	fl.StringVar(&v.file, "file", "", "run a scenario file (YAML; see 'lockctl simulate schema')")
	for _, g := range simulate.GuardNames {
		p := new(bool)
		v.guards[g] = p
	}
	fl.BoolVar(v.guards["fencing"], "fencing", true, "the store refuses writes with a fencing token below the highest it has seen")
	fl.BoolVar(v.guards["owner_check"], "owner-check", true, "renew and release compare the owner token first")
	fl.BoolVar(v.guards["cancel_on_loss"], "cancel-on-loss", true, "cancel the work when the lease can no longer be proven or the budget ends")
	fl.BoolVar(v.guards["idempotency_key"], "idempotency-key", true, "external sends carry a stable key the receiver dedupes")
	fl.StringVar(&v.budget, "budget", "", "execution budget; the lease comes from the policy (with --mode)")
	fl.StringVar(&v.mode, "mode", "", "trusted (renewed lease) or ordinary (fixed lease = budget)")
	fl.StringVar(&v.lease, "lease", "", "a fixed lease instead of the scenario's")
	fl.StringVar(&v.pause, "pause", "", "length of the scenario's process pause")
	fl.StringVar(&v.renewEvery, "renew-every", "", "renewal interval of a renewable lease")
	addPolicyFlags(cmd, "lease-cap", "renew-bound")
	fl.StringVar(&v.fenceSource, "fence-source", "", "where fencing tokens come from: redis (lost with a failover) or store (durable)")
	fl.StringVar(&v.check, "check", "", "what the holder checks right before a write: none or ttl")
	fl.BoolVar(&v.checkpoints, "checkpoints", false, "checkpoint sends so a take-over resumes instead of starting over")
	fl.StringVar(&v.expect, "expect", "", "exit 1 unless the verdict is this: safe or unsafe (for CI)")
	fl.BoolVar(&v.explore, "explore", false, "search the schedules around the scenario (pause, partition, crash, call and clock jump times and lengths)")
	addQuietFlag(cmd, &v.quiet)
	fl.IntVar(&v.grid, "grid", 12, fmt.Sprintf("points per dimension of the exhaustive exploration grid (lowered to stay under %d schedules)", simulate.MaxGridSchedules))
	fl.IntVar(&v.runs, "runs", 10000, "random schedules to explore (with --seed; implies random exploration, instead of --grid)")
	fl.Uint64Var(&v.seed, "seed", 1, "seed of the random exploration")
	fl.Float64Var(&v.timeScale, "time-scale", 0.01, "live mode (--redis): real seconds per virtual second, 0.001 to 1")
	fl.StringVar(&v.prefix, "prefix", "", `live mode: prefix of the four keys it writes (default "lockctl:sim:{<random>}:"); they must not exist, and are deleted at the end`)
	for name, values := range map[string][]string{
		"mode":         {"trusted", "ordinary"},
		"fence-source": {simulate.FenceRedis, simulate.FenceStore},
		"check":        {simulate.CheckNone, simulate.CheckTTL},
		"expect":       {history.VerdictSafe, history.VerdictUnsafe},
	} {
		_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
	}
}

// options checks the flags and arguments (exit 2 on bad input) and returns
// the options of the run: --list, or a scenario with its explore or live
// settings.
func (v *simulateFlags) options(f *Factory, cmd *cobra.Command, args []string) (*SimulateOptions, error) {
	format, err := f.Output(simulateFormats...)
	if err != nil {
		return nil, err
	}
	// A configured run format is a preference (Factory.Output): where it cannot draw, the table.
	if runFormat(format) && f.settingSource(cmd, keyOutput) != "flag" && (v.list || v.explore || cmd.Flags().Changed("redis")) {
		format = defaultFormat(simulateFormats)
	}
	if err := emptyFlags(cmd, "prefix"); err != nil {
		return nil, err
	}
	opts := &SimulateOptions{Printer: f.newPrinter(format), List: v.list, Explore: v.explore,
		ExploreOpts: simulate.ExploreOptions{Runs: v.runs, Seed: v.seed, Grid: v.grid, Random: cmd.Flags().Changed("runs") || cmd.Flags().Changed("seed")}}
	if v.expect != "" {
		if err := choice("expect", v.expect, history.VerdictSafe, history.VerdictUnsafe); err != nil {
			return nil, err
		}
		opts.Expect = v.expect
	}
	if v.list {
		return opts, listFlags(cmd, args, format)
	}
	if runFormat(format) && v.explore {
		return nil, usageErrorf("output %q is not available with --explore; use table, json or yaml", format)
	}
	if opts.Scenario, err = v.scenario(f, cmd, args); err != nil {
		return nil, err
	}
	if err := flagsNeed(cmd, v.explore, "--explore", "--explore", "runs", "seed", "grid"); err != nil {
		return nil, err
	}
	if err := flagsNeed(cmd, cmd.Flags().Changed("redis"), "live mode", "--redis", "time-scale", "prefix"); err != nil {
		return nil, err
	}
	if v.explore {
		if v.runs < 1 {
			return nil, usageErrorf("runs %d must be at least 1", v.runs)
		}
		if v.grid < 2 {
			return nil, usageErrorf("grid %d must be at least 2", v.grid)
		}
		if err := exploreGrid(cmd, f.IO.ErrOut, opts); err != nil {
			return nil, err
		}
	}
	opts.Ctx = cmd.Context()
	if f.IO.ErrTTY && !v.quiet {
		opts.Progress = f.IO.ErrOut
	}
	if cmd.Flags().Changed("redis") {
		if err := v.live(f, cmd, opts); err != nil {
			return nil, err
		}
	}
	return opts, nil
}

// listFlags refuses (exit 2) a scenario, another flag of simulate or
// -o mermaid or junit beside --list.
func listFlags(cmd *cobra.Command, args []string, format string) error {
	if len(args) > 0 {
		return usageErrorf("--list describes every built-in scenario; drop %q or drop --list", args[0])
	}
	other := ""
	cmd.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Changed && fl.Name != "list" && other == "" {
			other = fl.Name
		}
	})
	if other != "" {
		return usageErrorf("--%s does not apply to --list; drop one of them", other)
	}
	if runFormat(format) {
		return usageErrorf("output %q is not available with --list; use table, json or yaml", format)
	}
	return nil
}

// scenario is the built-in scenario named by args or the --file one, with
// the policy, fence, check and guard flags applied (exit 2 on bad input).
func (v *simulateFlags) scenario(f *Factory, cmd *cobra.Command, args []string) (simulate.Scenario, error) {
	var sc simulate.Scenario
	o, err := simulateOverrides(f, v.budget, v.mode, v.lease, v.pause, v.renewEvery)
	if err != nil {
		return sc, err
	}
	o.FenceSource, o.Check, o.Checkpoints = v.fenceSource, v.check, v.checkpoints
	if v.fenceSource != "" {
		if err := choice("fence-source", v.fenceSource, simulate.FenceRedis, simulate.FenceStore); err != nil {
			return sc, err
		}
	}
	if v.check != "" {
		if err := choice("check", v.check, simulate.CheckNone, simulate.CheckTTL); err != nil {
			return sc, err
		}
	}
	switch {
	case v.file != "" && len(args) > 0:
		return sc, usageErrorf("give a scenario name or --file, not both")
	case v.file != "":
		if sc, err = readScenarioFile(v.file); err != nil {
			return sc, err
		}
		if o.Budget > 0 || o.Lease > 0 || o.Mode != "" || o.RenewEvery > 0 || cmd.Flags().Changed("lease-cap") || cmd.Flags().Changed("renew-bound") {
			return sc, usageErrorf("--budget, --mode, --lease, --renew-every, --lease-cap and --renew-bound change built-in scenarios; set policy in %s", v.file)
		}
		if err := sc.Apply(o); err != nil {
			return sc, usageErrorf("%v", err)
		}
		for name, p := range v.guards {
			if cmd.Flags().Changed(strings.ReplaceAll(name, "_", "-")) {
				sc.Guards = sc.Guards.With(name, *p)
			}
		}
	case len(args) == 1:
		g := simulate.AllGuards()
		for name, p := range v.guards {
			g = g.With(name, *p)
		}
		if sc, err = simulate.Builtin(args[0], g, o); err != nil {
			return sc, usageErrorf("%v", err)
		}
		if sc.Nodes > 1 && !cmd.Flags().Changed("fencing") {
			sc.Guards.Fencing = false // Redlock issues no fencing token; --fencing models the store's counter
		}
		if err := policyFlagsUsed(cmd, sc); err != nil {
			return sc, err
		}
	default:
		return sc, usageErrorf("name a scenario (one of %s), give --file, or use --list", strings.Join(simulate.BuiltinNames(), ", "))
	}
	return sc, nil
}

// live checks the live mode flags (--redis given) and sets opts for a live
// run (exit 2 on bad input).
func (v *simulateFlags) live(f *Factory, cmd *cobra.Command, opts *SimulateOptions) error {
	if v.explore {
		return usageErrorf("--explore runs on the virtual clock only; drop --redis")
	}
	if err := simulate.LiveRefusal(opts.Scenario); err != nil {
		return usageErrorf("%v", err)
	}
	// Below 0.001 a 30s lease lasts under 30ms of real time, and
	// live timing is mostly scheduling jitter.
	if !(v.timeScale >= 0.001 && v.timeScale <= 1) { // NaN too
		return usageErrorf("time-scale %s must be at least 0.001 and at most 1", strconv.FormatFloat(v.timeScale, 'g', -1, 64))
	}
	if v.prefix != "" && !strings.HasPrefix(v.prefix, "lockctl:") {
		return usageErrorf("prefix %q must start with lockctl: so it cannot touch your keys", v.prefix)
	}
	opts.Live, opts.TimeScale, opts.Prefix = true, v.timeScale, v.prefix
	opts.Conn = func() (*RedisConn, error) { return f.Redis(cmd.Context()) }
	return nil
}

// policyFlagsUsed refuses (exit 2) --lease-cap and --renew-bound on a
// scenario whose lease is not derived from a budget (stale-writer without
// --budget or --mode, or with --lease): the policy does not make that
// lease, so they would be ignored without a word.
func policyFlagsUsed(cmd *cobra.Command, sc simulate.Scenario) error {
	if sc.Policy.Budget > 0 {
		return nil
	}
	for _, name := range []string{"lease-cap", "renew-bound"} {
		if cmd.Flags().Changed(name) {
			return usageErrorf("--%s applies to a lease derived from a budget; scenario %q has a fixed lease of %s: give --budget or --mode (not --lease), or drop --%s",
				name, sc.Name, lockcore.FormatDuration(sc.Policy.Lease), name)
		}
	}
	return nil
}

// flagsNeed refuses (exit 2) flags of names given without the flag (add)
// that turns on what they set up (what), e.g. --runs without --explore:
// ignored silently, they would look as if they had worked.
func flagsNeed(cmd *cobra.Command, on bool, what, add string, names ...string) error {
	if on {
		return nil
	}
	for _, name := range names {
		if cmd.Flags().Changed(name) {
			return usageErrorf("--%s sets up %s; add %s or drop --%s", name, what, add, name)
		}
	}
	return nil
}

// exploreGrid refuses --grid beside --runs or --seed (they pick random
// schedules; the grid would be ignored) and a grid that cannot fit under
// simulate.MaxGridSchedules, and says on w when it lowers the grid's points
// per dimension to fit.
func exploreGrid(cmd *cobra.Command, w io.Writer, opts *SimulateOptions) error {
	for _, name := range []string{"runs", "seed"} {
		if cmd.Flags().Changed(name) && cmd.Flags().Changed("grid") {
			return usageErrorf("--grid sets up a grid exploration; --%s picks random schedules instead: drop --grid or drop --%s", name, name)
		}
	}
	if opts.ExploreOpts.Random {
		return nil
	}
	grid := opts.ExploreOpts.Grid
	points, dims, err := simulate.GridPoints(opts.Scenario, grid)
	if gerr := (*simulate.GridTooLargeError)(nil); errors.As(err, &gerr) {
		return usageErrorf("--explore: scenario %q has %v; explore at random schedules instead, e.g. --runs 100000", oneLineText(opts.Scenario.Name), gerr)
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	if points < grid {
		which := "--grid"
		if !cmd.Flags().Changed("grid") {
			which = "the default --grid"
		}
		fmt.Fprintf(w, "lockctl: %s %d over %d dimensions is more than the cap of %d schedules: lowered to %d points per dimension\n",
			which, grid, dims, simulate.MaxGridSchedules, points)
	}
	return nil
}

func simulateOverrides(f *Factory, budget, mode, lease, pause, renewEvery string) (simulate.Overrides, error) {
	var o simulate.Overrides
	var err error
	parse := func(name, s string) time.Duration {
		if s == "" || err != nil {
			return 0
		}
		d, perr := lockcore.ParsePositiveDuration(s)
		if perr != nil {
			err = usageErrorf("%s %s", name, perr)
		}
		return d
	}
	o.Budget = parse("budget", budget)
	o.Lease = parse("lease", lease)
	o.Pause = parse("pause", pause)
	o.RenewEvery = parse("renew-every", renewEvery)
	if err != nil {
		return o, err
	}
	if o.Budget > 0 && o.Lease > 0 {
		return o, usageErrorf("give --budget (with --mode) or --lease, not both")
	}
	if mode != "" {
		m, err := lockcore.ParseMode(mode)
		if err != nil {
			return o, usageErrorf("%v", err)
		}
		o.Mode = m
		if m == lockcore.ModeOrdinary {
			if err := renewFlagsUnused(f.cmd); err != nil {
				return o, err
			}
		}
	}
	// Every budget-derived lease follows the configured policy, as lease's
	// and checklist's do (it took it only with --budget).
	if o.Policy, err = f.policySetting(); err != nil {
		return o, err
	}
	return o, nil
}

func readScenarioFile(path string) (simulate.Scenario, error) {
	data, err := readInputFile("scenario file", path, simulate.MaxFileSize+1)
	if err != nil {
		return simulate.Scenario{}, err
	}
	sc, err := simulate.ParseFile(data)
	if err != nil {
		return simulate.Scenario{}, &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s: %w", path, err), Hint: scenarioHint}
	}
	return sc, nil
}

// scenarioHint is the second line of a scenario file error: the flags do
// not help with what is inside the file.
const scenarioHint = "The scenario format: lockctl simulate schema, or lockctl simulate --list for the built-in ones."

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func newCmdSimulateSchema(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of scenario files",
		Long: `Print the JSON Schema (draft 2020-12) every --file scenario is validated
against. Durations are strings with a unit (500ms, 30s, 20m, 13h).`,
		Example: `  lockctl simulate schema > scenario.schema.json
  # the event actions:
  lockctl simulate schema | jq '."$defs".event.properties.do.enum'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := f.IO.Out.Write(simulate.Schema())
			return err
		},
	}
}

func simulateRun(opts *SimulateOptions) error {
	p := opts.Printer
	if opts.List {
		res := SimulateListResult{Scenarios: simulate.Builtins()}
		return p.Print(res, func(t *TableView) { listTable(t, res) })
	}
	if opts.Explore {
		return simulateExplore(opts)
	}
	res, err := simulate.Run(opts.Scenario)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if opts.Live {
		return simulateLive(opts, res)
	}
	switch p.Format {
	case formatMermaid:
		_, err = fmt.Fprint(p.Out, mermaid(res.History()))
	case formatJUnit:
		// One case, timed 0: the virtual clock's time is not the run's.
		run := res.History()
		err = writeJUnit(p.Out, "lockctl simulate", "lockctl.simulate",
			[]junitRun{{Name: res.Scenario, Verdict: res.Verdict, Violations: len(res.Violations), Found: run.Violations}})
	case formatHTML:
		err = htmlReport(p.Out, res.History(), simulateHTMLExtra(res))
	default:
		err = p.Print(res, func(t *TableView) { resultTable(t, res) })
	}
	if err != nil {
		return err
	}
	return expectVerdict(opts.Expect, res.Verdict)
}

// runFormat says whether format draws one run (mermaid, junit, html): not a
// list, an exploration or a live comparison.
func runFormat(format string) bool {
	return format == formatMermaid || format == formatJUnit || format == formatHTML
}

func expectVerdict(expect, verdict string) error {
	if expect != "" && expect != verdict {
		return checkFailed()
	}
	return nil
}
