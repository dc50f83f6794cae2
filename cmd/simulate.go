package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/lockctl/lockctl/simulate"
	"github.com/schollz/progressbar/v3"
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
	// Progress is stderr when it is a terminal (an exploration's progress bar), else nil.
	Progress io.Writer
}

// NewCmdSimulate returns `lockctl simulate`; runF replaces the run function in tests.
func NewCmdSimulate(f *Factory, runF func(*SimulateOptions) error) *cobra.Command {
	var (
		list, explore, checkpoints             bool
		file, expect, fenceSource, check, mode string
		budget, lease, pause, renewEvery       string
		guards                                 = map[string]*bool{}
		runs, grid                             int
		seed                                   uint64
		timeScale                              float64
		prefix                                 string
	)
	cmd := &cobra.Command{
		Use:         "simulate [SCENARIO] [flags]",
		Annotations: outputFormats(simulateFormats),
		Short:       "Replay stale writers and other lock failures on a virtual clock, or against a real Redis",
		Long: `Replay a lock failure on a deterministic virtual clock (ms, no sleeping):
processes with a worker and a renewer, a lock service (SET NX PX, owner-checked
or blind renew/release, a fence counter, expiry on the server's clock,
failover, clock jumps) and a store that keeps the highest fencing token it has
seen. It reports every broken invariant (STALE_WRITE_ACCEPTED, OVERLAP,
FOREIGN_RELEASE, FOREIGN_RENEW, LOCK_LOST_WHILE_WORKING, DUPLICATE_EFFECT,
FENCE_BACKWARDS), the verdict, and which guard saved, contained or would have
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

Scenario files (--file) follow the schema printed by 'lockctl simulate schema'.`,
		Example: `  lockctl simulate --list
  lockctl simulate stale-writer
  lockctl simulate stale-writer --fencing=false --check ttl
  lockctl simulate crash-recovery --mode ordinary -o json
  lockctl simulate failover --fence-source store -o mermaid
  lockctl simulate --file incident.yaml --expect safe
  lockctl simulate renewal-loss --cancel-on-loss=false --explore --runs 10000 --seed 7
  lockctl simulate unsafe-release --redis redis://127.0.0.1:6379/0 --time-scale 0.01`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeScenarios,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := f.Output(simulateFormats...)
			if err != nil {
				return err
			}
			if err := emptyFlags(cmd, "prefix"); err != nil {
				return err
			}
			opts := &SimulateOptions{Printer: f.newPrinter(format), List: list, Explore: explore,
				ExploreOpts: simulate.ExploreOptions{Runs: runs, Seed: seed, Grid: grid, Random: cmd.Flags().Changed("runs") || cmd.Flags().Changed("seed")}}
			if expect != "" {
				if err := choice("expect", expect, simulate.VerdictSafe, simulate.VerdictUnsafe); err != nil {
					return err
				}
				opts.Expect = expect
			}
			if list {
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
				if format == formatMermaid {
					return usageErrorf("output %q is not available with --list; use table, json or yaml", format)
				}
				if runF != nil {
					return runF(opts)
				}
				return simulateRun(opts)
			}
			if format == formatMermaid && explore {
				return usageErrorf("output %q is not available with --explore; use table, json or yaml", format)
			}
			o, err := simulateOverrides(f, budget, mode, lease, pause, renewEvery)
			if err != nil {
				return err
			}
			o.FenceSource, o.Check, o.Checkpoints = fenceSource, check, checkpoints
			if fenceSource != "" {
				if err := choice("fence-source", fenceSource, simulate.FenceRedis, simulate.FenceStore); err != nil {
					return err
				}
			}
			if check != "" {
				if err := choice("check", check, simulate.CheckNone, simulate.CheckTTL); err != nil {
					return err
				}
			}
			switch {
			case file != "" && len(args) > 0:
				return usageErrorf("give a scenario name or --file, not both")
			case file != "":
				if opts.Scenario, err = readScenarioFile(file); err != nil {
					return err
				}
				if o.Budget > 0 || o.Lease > 0 || o.Mode != "" || o.RenewEvery > 0 || cmd.Flags().Changed("lease-cap") || cmd.Flags().Changed("renew-bound") {
					return usageErrorf("--budget, --mode, --lease, --renew-every, --lease-cap and --renew-bound change built-in scenarios; set policy in %s", file)
				}
				if err := opts.Scenario.Apply(o); err != nil {
					return usageErrorf("%v", err)
				}
				for name, p := range guards {
					if cmd.Flags().Changed(strings.ReplaceAll(name, "_", "-")) {
						opts.Scenario.Guards = opts.Scenario.Guards.With(name, *p)
					}
				}
			case len(args) == 1:
				g := simulate.AllGuards()
				for name, p := range guards {
					g = g.With(name, *p)
				}
				if opts.Scenario, err = simulate.Builtin(args[0], g, o); err != nil {
					return usageErrorf("%v", err)
				}
				if err := policyFlagsUsed(cmd, opts.Scenario); err != nil {
					return err
				}
			default:
				return usageErrorf("name a scenario (one of %s), give --file, or use --list", strings.Join(simulate.BuiltinNames(), ", "))
			}
			if err := flagsNeed(cmd, explore, "--explore", "--explore", "runs", "seed", "grid"); err != nil {
				return err
			}
			if err := flagsNeed(cmd, cmd.Flags().Changed("redis"), "live mode", "--redis", "time-scale", "prefix"); err != nil {
				return err
			}
			if explore {
				if runs < 1 {
					return usageErrorf("runs %d must be at least 1", runs)
				}
				if grid < 2 {
					return usageErrorf("grid %d must be at least 2", grid)
				}
				if err := exploreGrid(cmd, f.IO.ErrOut, opts); err != nil {
					return err
				}
			}
			opts.Ctx = cmd.Context()
			if f.IO.ErrTTY {
				opts.Progress = f.IO.ErrOut
			}
			if cmd.Flags().Changed("redis") {
				if explore {
					return usageErrorf("--explore runs on the virtual clock only; drop --redis")
				}
				// Below 0.001 a 30s lease lasts under 30ms of real time, and
				// live timing is mostly scheduling jitter.
				if !(timeScale >= 0.001 && timeScale <= 1) { // NaN too
					return usageErrorf("time-scale %s must be at least 0.001 and at most 1", strconv.FormatFloat(timeScale, 'g', -1, 64))
				}
				if prefix != "" && !strings.HasPrefix(prefix, "lockctl:") {
					return usageErrorf("prefix %q must start with lockctl: so it cannot touch your keys", prefix)
				}
				opts.Live, opts.TimeScale, opts.Prefix = true, timeScale, prefix
				opts.Conn = func() (*RedisConn, error) { return f.Redis(cmd.Context()) }
			}
			if runF != nil {
				return runF(opts)
			}
			return simulateRun(opts)
		},
	}
	cmd.AddCommand(newCmdSimulateSchema(f))
	fl := cmd.Flags()
	fl.BoolVar(&list, "list", false, "describe the built-in scenarios")
	fl.StringVar(&file, "file", "", "run a scenario file (YAML; see 'lockctl simulate schema')")
	for _, g := range simulate.GuardNames {
		p := new(bool)
		guards[g] = p
	}
	fl.BoolVar(guards["fencing"], "fencing", true, "the store refuses writes with a fencing token below the highest it has seen")
	fl.BoolVar(guards["owner_check"], "owner-check", true, "renew and release compare the owner token first")
	fl.BoolVar(guards["cancel_on_loss"], "cancel-on-loss", true, "cancel the work when the lease can no longer be proven or the budget ends")
	fl.BoolVar(guards["idempotency_key"], "idempotency-key", true, "external sends carry a stable key the receiver dedupes")
	fl.StringVar(&budget, "budget", "", "execution budget; the lease comes from the policy (with --mode)")
	fl.StringVar(&mode, "mode", "", "trusted (renewed lease) or ordinary (fixed lease = budget)")
	fl.StringVar(&lease, "lease", "", "a fixed lease instead of the scenario's")
	fl.StringVar(&pause, "pause", "", "length of the scenario's process pause")
	fl.StringVar(&renewEvery, "renew-every", "", "renewal interval of a renewable lease")
	addPolicyFlags(cmd, "lease-cap", "renew-bound")
	fl.StringVar(&fenceSource, "fence-source", "", "where fencing tokens come from: redis (lost with a failover) or store (durable)")
	fl.StringVar(&check, "check", "", "what the holder checks right before a write: none or ttl")
	fl.BoolVar(&checkpoints, "checkpoints", false, "checkpoint sends so a take-over resumes instead of starting over")
	fl.StringVar(&expect, "expect", "", "exit 1 unless the verdict is this: safe or unsafe (for CI)")
	fl.BoolVar(&explore, "explore", false, "search the schedules around the scenario (pause, partition, crash, call and clock jump times and lengths)")
	fl.IntVar(&grid, "grid", 12, fmt.Sprintf("points per dimension of the exhaustive exploration grid (lowered to stay under %d schedules)", simulate.MaxGridSchedules))
	fl.IntVar(&runs, "runs", 10000, "random schedules to explore (with --seed; implies random exploration, instead of --grid)")
	fl.Uint64Var(&seed, "seed", 1, "seed of the random exploration")
	fl.Float64Var(&timeScale, "time-scale", 0.01, "live mode (--redis): real seconds per virtual second, 0.001 to 1")
	fl.StringVar(&prefix, "prefix", "", `live mode: prefix of the four keys it writes (default "lockctl:sim:{<random>}:"); they must not exist, and are deleted at the end`)
	for name, values := range map[string][]string{
		"mode":         {"trusted", "ordinary"},
		"fence-source": {simulate.FenceRedis, simulate.FenceStore},
		"check":        {simulate.CheckNone, simulate.CheckTTL},
		"expect":       {simulate.VerdictSafe, simulate.VerdictUnsafe},
	} {
		_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
	}
	return cmd
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
	data, err := readAtMost(path, simulate.MaxFileSize+1)
	if err != nil {
		return simulate.Scenario{}, usageErrorf("scenario file %q: %v", path, unwrapPathError(err))
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
  lockctl simulate schema | jq '."$defs".event.properties.do.enum'   # the event actions`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := f.IO.Out.Write(simulate.Schema())
			return err
		},
	}
}

// SimulateListResult is the JSON shape of `lockctl simulate --list`.
type SimulateListResult struct {
	Scenarios []simulate.BuiltinInfo `json:"scenarios"`
}

// SimulateLiveResult is the JSON shape of a live run: the model's result and
// the live one side by side, whether their verdicts agree, and whether they
// found the same violation codes (simulate.ViolationCodes; times differ by
// design).
type SimulateLiveResult struct {
	Model     simulate.Result     `json:"model"`
	Live      simulate.LiveResult `json:"live"`
	Agrees    bool                `json:"agrees"`
	SameCodes bool                `json:"same_codes"`
}

// simulateLive runs the scenario against Redis and prints both verdicts;
// --expect judges the live verdict.
func simulateLive(opts *SimulateOptions, model simulate.Result) error {
	if opts.Printer.Format == formatMermaid {
		return usageErrorf("output %q is not available in live mode; use table, json or yaml", formatMermaid)
	}
	conn, err := opts.Conn()
	if err != nil {
		return err
	}
	defer conn.Close()
	if conn.Cluster && opts.Prefix != "" {
		k := lockcore.Keys{Lock: opts.Prefix + "lock", Fence: opts.Prefix + "fence"}
		if err := k.SameSlot(); err != nil {
			return usageErrorf("prefix %q in a Redis Cluster: %v; put a hash tag in it, e.g. lockctl:sim:{mine}:", opts.Prefix, err)
		}
	}
	ctx := opts.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	live, err := simulate.RunLive(ctx, opts.Scenario, simulate.LiveOptions{Client: conn.Client, TimeScale: opts.TimeScale, Prefix: opts.Prefix})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if ke := (*simulate.KeyExistsError)(nil); errors.As(err, &ke) {
			return usageErrorf("prefix %q: %v; choose another --prefix", opts.Prefix, err)
		}
		return redisError(conn.URL, err)
	}
	res := compareLive(model, live)
	err = opts.Printer.Print(res, func(t *TableView) {
		st := t.Styles()
		t.Title(fmt.Sprintf("scenario %s: model vs live (Redis %s, time scale %s, keys under %s, deleted at the end)",
			oneLineText(model.Scenario), conn.URL, strconv.FormatFloat(live.TimeScale, 'g', -1, 64), oneLineText(live.Prefix)))
		t.Line("")
		_, rows := timelineRows(simulate.Result{Events: live.Events})
		t.Table([]string{"time", "actor", "event", "ok", "note"}, cut(rows, 4, 6))
		t.Line("")
		t.Line("model verdict: %s", st.Level(model.Verdict))
		for _, v := range model.Violations {
			t.Line("  %s at %s (%s): %s", v.Code, fmtMS(v.AtMS), v.Actor, v.Message)
		}
		t.Line("live verdict:  %s", st.Level(live.Verdict))
		for _, v := range live.Violations {
			t.Line("  %s at ~%s (%s): %s", v.Code, fmtMS(v.AtMS), v.Actor, v.Message)
		}
		t.Line("%s", liveAgreement(st, res))
	})
	if err != nil {
		return err
	}
	return expectVerdict(opts.Expect, live.Verdict)
}

// compareLive puts the model's result and the live one side by side.
func compareLive(model simulate.Result, live simulate.LiveResult) SimulateLiveResult {
	return SimulateLiveResult{Model: model, Live: live, Agrees: live.Verdict == model.Verdict,
		SameCodes: slices.Equal(simulate.ViolationCodes(model.Violations), simulate.ViolationCodes(live.Violations))}
}

// liveAgreement is the last line of a live run's table: whether the model's
// and the live run's verdicts agree, then whether their violation codes do.
func liveAgreement(st *Styles, res SimulateLiveResult) string {
	const why = " (live timing is real: see the live timeline)"
	switch {
	case !res.Agrees:
		return st.Level("warning") + " the verdicts differ" + why
	case !res.SameCodes:
		return fmt.Sprintf("%s the verdicts agree, the violations differ: model: %s; live: %s%s", st.Level("warning"),
			codeList(simulate.ViolationCodes(res.Model.Violations)), codeList(simulate.ViolationCodes(res.Live.Violations)), why)
	}
	return st.Level("ok") + " the verdicts agree"
}

// codeList writes violation codes as "A, B", or "none".
func codeList(codes []string) string {
	if len(codes) == 0 {
		return "none"
	}
	return strings.Join(codes, ", ")
}

// cut keeps the first n columns of each row and the column at note.
func cut(rows [][]string, n, note int) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = append(append([]string{}, r[:n]...), r[note])
	}
	return out
}

func simulateRun(opts *SimulateOptions) error {
	p := opts.Printer
	if opts.List {
		res := SimulateListResult{Scenarios: simulate.Builtins()}
		return p.Print(res, func(t *TableView) {
			rows := make([][]string, 0, len(res.Scenarios))
			for _, b := range res.Scenarios {
				guard, safe := b.Guard, "unsafe"
				if guard == "" {
					guard = "-"
				}
				if b.SafeGuarded {
					safe = "safe"
				}
				rows = append(rows, []string{b.Name, safe, guard, b.Description})
			}
			t.Table([]string{"scenario", "all guards", "its guard", "what happens"}, rows)
		})
	}
	if opts.Explore {
		ctx := opts.Ctx
		if ctx == nil {
			ctx = context.Background()
		}
		eo := opts.ExploreOpts
		if opts.Progress != nil {
			var bar *progressbar.ProgressBar
			eo.Progress = func(done, total int) {
				if bar == nil {
					bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(opts.Progress),
						progressbar.OptionSetDescription("exploring schedules"), progressbar.OptionThrottle(100*time.Millisecond),
						progressbar.OptionClearOnFinish())
				}
				_ = bar.Set(done)
				if done >= total {
					_ = bar.Finish()
				}
			}
		}
		res, err := simulate.Explore(ctx, opts.Scenario, eo)
		if err != nil {
			return err
		}
		if err := p.Print(res, func(t *TableView) { exploreTable(t, res) }); err != nil {
			return err
		}
		return expectVerdict(opts.Expect, res.Verdict)
	}
	res, err := simulate.Run(opts.Scenario)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if opts.Live {
		return simulateLive(opts, res)
	}
	if p.Format == formatMermaid {
		_, err := fmt.Fprint(p.Out, mermaid(res))
		if err != nil {
			return err
		}
		return expectVerdict(opts.Expect, res.Verdict)
	}
	if err := p.Print(res, func(t *TableView) { resultTable(t, res) }); err != nil {
		return err
	}
	return expectVerdict(opts.Expect, res.Verdict)
}

func expectVerdict(expect, verdict string) error {
	if expect != "" && expect != verdict {
		return checkFailed()
	}
	return nil
}

// resultTable renders a run: heading, timeline, swimlane, verdict,
// violations, guards, store and notes.
func resultTable(t *TableView, res simulate.Result) {
	st := t.Styles()
	t.Title("scenario " + oneLineText(res.Scenario))
	t.Line("lease %s", leaseText(res.Lease))
	t.Line("lock: holder, PTTL, #fence after the event; store: the highest fence the store has seen")
	t.Line("")
	header, rows := timelineRows(res)
	t.Table(header, rows)
	t.Line("")
	for _, l := range swimlane(st, res, laneWidth(t.Width())) {
		t.Line("%s", l)
	}
	t.Line("")
	t.Line("verdict: %s", st.Level(res.Verdict))
	for _, v := range res.Violations {
		t.Line("  %s %s at %s (%s): %s", st.Level("error"), v.Code, fmtMS(v.AtMS), v.Actor, v.Message)
	}
	t.Line("guards:")
	for _, g := range res.Guards {
		on := "on "
		if !g.Enabled {
			on = "off"
		}
		line := fmt.Sprintf("  %-15s %s  %s", g.Guard, on, guardEffect(st, g.Effect))
		if g.Note != "" {
			line += ": " + g.Note
		}
		t.Line("%s", line)
	}
	correct := st.Level("ok")
	if !res.Store.Correct {
		correct = st.Level("error") + " a stale write was accepted"
	}
	t.Line("store: highest fence %d, %d accepted, %d rejected: %s", res.Store.HighestFence, res.Store.Accepted, res.Store.Rejected, correct)
	for _, n := range res.Notes {
		t.Line("note: %s", n)
	}
}

func guardEffect(st *Styles, effect string) string {
	switch effect {
	case simulate.EffectSaved, simulate.EffectContained:
		return st.OK.Render(effect)
	case simulate.EffectWouldSave, simulate.EffectWouldContain:
		return st.Warn.Render(effect)
	}
	return st.Muted.Render(effect)
}

func leaseText(l simulate.LeaseReport) string {
	s := fmtMS(l.LeaseMS) + " fixed"
	if l.Renewable {
		s = fmt.Sprintf("%s renewed every %s", fmtMS(l.LeaseMS), fmtMS(l.RenewEveryMS))
		if l.RenewBoundMS > 0 {
			s += ", bound " + fmtMS(l.RenewBoundMS)
		}
	}
	if l.BudgetMS > 0 {
		s += fmt.Sprintf(" (budget %s, %s)", fmtMS(l.BudgetMS), l.Mode)
	}
	return s + fmt.Sprintf(", cancel margin %s", fmtMS(l.MarginMS))
}

func fmtMS(v int64) string { return lockcore.FormatDuration(time.Duration(v) * time.Millisecond) }

// timelineRows is the pure row builder of the timeline table.
func timelineRows(res simulate.Result) ([]string, [][]string) {
	header := []string{"time", "actor", "event", "ok", "lock", "store", "note"}
	rows := make([][]string, 0, len(res.Events))
	for _, e := range res.Events {
		at := fmtMS(e.AtMS)
		kind := e.Kind
		if e.Count > 1 {
			at += "…" + fmtMS(e.UntilMS)
			kind += " ×" + strconv.Itoa(e.Count)
		}
		ok := "ok"
		if !e.OK {
			ok = "no"
		}
		lock := "-"
		if e.Lock != nil {
			lock = fmt.Sprintf("%s %s #%d", e.Lock.Holder, fmtMS(e.Lock.PTTLMS), e.Lock.Fence)
		}
		store := "-"
		if e.StoreFence > 0 {
			store = "#" + strconv.FormatInt(e.StoreFence, 10)
		}
		rows = append(rows, []string{at, e.Actor, kind, ok, lock, store, e.Note})
	}
	return header, rows
}

// laneWidth is the swimlane's width in columns: 60, or fewer (at least 10)
// to fit beside the labels on a terminal width columns wide (0: no limit).
func laneWidth(width int) int {
	if width <= 0 {
		return 60
	}
	return max(min(60, width-laneLabelWidth), 10)
}

// swimlane draws one lane per actor over width columns plus the lock's
// holder, with a legend: █ working with the lock, ▓ working without it,
// ░ paused, ~ cut off from Redis, = in a blocking call, x crashed.
func swimlane(st *Styles, res simulate.Result, width int) []string {
	end := max(res.EndMS, 1)
	from := func(c int) int64 { return end * int64(c) / int64(width) }
	axis := fmt.Sprintf("%s0%s%s", strings.Repeat(" ", laneLabelWidth), strings.Repeat(" ", max(width-1-len(fmtMS(end)), 1)), fmtMS(end))
	out := []string{axis}
	for _, lane := range res.Lanes {
		var b strings.Builder
		b.WriteString(st.Lane.Label.Render(lane.Actor))
		run, runStyle := "", (*lipgloss.Style)(nil)
		flush := func() {
			if run != "" && runStyle != nil {
				b.WriteString(runStyle.Render(run))
			} else {
				b.WriteString(run)
			}
			run = ""
		}
		for c := range width {
			ch, style := laneChar(st, lane, from(c), max(from(c+1), from(c)+1))
			if style != runStyle {
				flush()
				runStyle = style
			}
			run += ch
		}
		flush()
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	var lock strings.Builder
	lock.WriteString(st.Lane.Label.Render("lock"))
	for c := range width {
		t := (from(c) + from(c+1)) / 2
		holder := "·"
		for _, e := range res.Events {
			if e.AtMS > t {
				break
			}
			holder = "·"
			if e.Lock != nil {
				holder = e.Lock.Holder[:1]
			}
		}
		lock.WriteString(holder)
	}
	out = append(out, lock.String())
	out = append(out, st.Muted.Render("legend: █ working with the lock  ▓ working without it  ░ paused  ~ cut off from Redis  = blocking call  x crashed  · lock free"))
	return out
}

// laneChar is the most telling state of a lane in [from, to): crashed, then
// working without the lock, then working, call, cut off, paused, idle.
func laneChar(st *Styles, lane simulate.Lane, from, to int64) (string, *lipgloss.Style) {
	best, ch, style := 0, " ", (*lipgloss.Style)(nil)
	for _, s := range lane.Segments {
		if s.ToMS <= from || s.FromMS >= to {
			continue
		}
		rank, c, sty := 0, " ", (*lipgloss.Style)(nil)
		switch {
		case s.State == simulate.LaneCrashed:
			rank, c, sty = 7, "x", &st.Lane.Crashed
		case s.State == simulate.LaneIdle:
		case s.State == simulate.LanePaused:
			rank, c, sty = 2, "░", &st.Lane.Paused
		case !s.Holds:
			rank, c, sty = 6, "▓", &st.Lane.Lost
		case s.State == simulate.LaneWorking:
			rank, c, sty = 5, "█", &st.Lane.Holding
		case s.State == simulate.LaneCall:
			rank, c, sty = 4, "=", &st.Lane.Call
		case s.State == simulate.LanePartitioned:
			rank, c, sty = 3, "~", &st.Lane.Partitioned
		}
		if rank > best {
			best, ch, style = rank, c, sty
		}
	}
	return ch, style
}

// mermaid renders a run as a Mermaid sequence diagram for a postmortem.
func mermaid(res simulate.Result) string {
	var b strings.Builder
	clean := func(s string) string {
		return strings.NewReplacer(";", ",", "#", "no. ", "\n", " ").Replace(s)
	}
	line := func(format string, args ...any) { fmt.Fprintf(&b, "    "+format+"\n", args...) }
	b.WriteString("sequenceDiagram\n")
	line("title %s: %s", clean(res.Scenario), res.Verdict)
	for _, a := range res.Actors {
		if id := mermaidID(a); id != a {
			line("participant %s as %s", id, a)
		} else {
			line("participant %s", a)
		}
	}
	line("participant R as Redis")
	line("participant S as Store")
	hasSend := false
	for _, e := range res.Events {
		if e.Kind == "send" {
			hasSend = true
		}
	}
	if hasSend {
		line("participant X as Receiver")
	}
	for _, e := range res.Events {
		at := fmtMS(e.AtMS)
		note := clean(e.Note)
		switch e.Kind {
		case "acquire", "renew", "release":
			verb := map[string]string{"acquire": "SET NX PX " + fmtMS(res.Lease.LeaseMS), "renew": "PEXPIRE", "release": "DEL"}[e.Kind]
			if e.Count > 1 {
				verb += fmt.Sprintf(" ×%d until %s", e.Count, fmtMS(e.UntilMS))
			}
			line("%s->>R: %s %s", mermaidID(e.Actor), at, verb)
			arrow := "R-->>%s: %s"
			if !e.OK {
				arrow = "R--x%s: %s"
			} else if e.Kind == "acquire" {
				note = fmt.Sprintf("OK, fence %d", e.Fence)
			}
			line(arrow, mermaidID(e.Actor), note)
		case "write":
			line("%s->>S: %s write, fence %d", mermaidID(e.Actor), at, e.Fence)
			arrow := "S-->>%s: %s"
			if !e.OK {
				arrow = "S--x%s: %s"
			}
			line(arrow, mermaidID(e.Actor), note)
		case "send":
			line("%s->>X: %s send", mermaidID(e.Actor), at)
			line("X-->>%s: %s", mermaidID(e.Actor), note)
		case "expire", "failover", "clock_jump":
			line("Note over R: %s %s: %s", at, e.Kind, note)
		default:
			line("Note over %s: %s %s: %s", mermaidID(e.Actor), at, strings.ReplaceAll(e.Kind, "_", " "), note)
		}
	}
	for _, v := range res.Violations {
		line("Note over %s: %s at %s: %s", mermaidID(v.Actor), v.Code, fmtMS(v.AtMS), clean(v.Message))
	}
	return b.String()
}

// mermaidID is the participant id of actor a: a itself, unless it is the
// id of another participant (R, S, X) or a word Mermaid's sequence diagrams
// take as a keyword (an actor named "end" closes a block that was never
// opened, and the diagram does not render); then P_a, shown as a. An actor
// whose name starts with P_ gets P_ too, so that P_R is not R's id.
func mermaidID(a string) string {
	if strings.HasPrefix(a, "P_") {
		return "P_" + a
	}
	switch strings.ToLower(a) {
	case "r", "s", "x", "participant", "actor", "as", "loop", "alt", "else", "opt", "par", "and", "rect", "end",
		"critical", "option", "break", "note", "over", "left", "right", "of", "activate", "deactivate",
		"autonumber", "title", "box", "create", "destroy", "link", "links", "properties", "details", "accdescr", "acctitle":
		return "P_" + a
	}
	return a
}

// exploreTable renders an exploration: what was varied, the counts per
// invariant, and the shortest counterexample as a scenario file.
func exploreTable(t *TableView, res simulate.ExploreResult) {
	st := t.Styles()
	how := "grid"
	if res.Seed != nil {
		how = fmt.Sprintf("random, seed %d", *res.Seed)
	}
	t.Title(fmt.Sprintf("explore %s (%s): %s, %d violating", oneLineText(res.Scenario), how, plural(res.Schedules, "schedule", "schedules"), res.Violating))
	if len(res.Dimensions) == 0 {
		t.Line("nothing to vary: the scenario has no pause, partition, crash, call, failover or clock jump; only the base schedule ran")
	}
	for _, d := range res.Dimensions {
		actor := d.Actor
		if actor == "" {
			actor = "redis"
		}
		t.Line("  varied: %s's %s, %s from %s to %s", actor, d.Action, d.Field, fmtMS(d.FromMS), fmtMS(d.ToMS))
	}
	t.Line("")
	if len(res.ByCode) > 0 {
		rows := make([][]string, 0, len(res.ByCode))
		for _, c := range res.ByCode {
			rows = append(rows, []string{c.Code, strconv.Itoa(c.Schedules)})
		}
		t.Table([]string{"invariant", "violating schedules"}, rows)
		t.Line("")
	}
	t.Line("verdict: %s", st.Level(res.Verdict))
	if res.Counterexample == nil {
		return
	}
	t.Line("")
	t.Line("shortest counterexample (save it and replay with --file):")
	for _, v := range res.Counterexample.Violations {
		t.Line("  # %s at %s (%s): %s", v.Code, fmtMS(v.AtMS), v.Actor, v.Message)
	}
	t.Line("%s", strings.TrimRight(res.Counterexample.File, "\n"))
}
