package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/supervise"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/spf13/cobra"
)

// RunOptions are the inputs of `lockctl run`.
type RunOptions struct {
	IO *IOStreams
	// Printer renders the --dry-run plan.
	Printer *Printer
	// Redis connects to the configured server (Factory.Redis).
	Redis func(context.Context) (*RedisConn, error)
	// Keys are built for a standalone server; KeysFor rebuilds them with the
	// cluster rules once the connection turns out to be a cluster (keysFor).
	Keys    lockcore.Keys
	KeysFor func(cluster bool) (lockcore.Keys, error)
	Lease   lockcore.Lease
	// Wait is how long to retry while the lock is held (0: one attempt).
	Wait    time.Duration
	Backoff lockcore.Backoff
	// Grace is the time between SIGTERM and SIGKILL, after lockcore's
	// Lease.ClampGrace.
	Grace time.Duration
	// GraceClamped says the --grace asked for did not fit the lease;
	// GraceNote is the stderr line saying so, written once the run can
	// start (in a dry run, or once the lock is acquired).
	GraceClamped bool
	GraceNote    string
	// Command is the child's argv (already wrapped in sh -c with --shell).
	Command []string
	DryRun  bool
	// PassSecrets is --pass-secrets: the child keeps lockctl's password
	// variables (childEnv).
	PassSecrets bool
	// Environ is lockctl's environment (KEY=VALUE), the child's before
	// childEnv and the LOCKCTL_* variables.
	Environ []string
}

// RunPlan is the stable JSON shape of `lockctl run --dry-run -o json`
// (docs/run.md): the keys, the lease and when the child is stopped. Durations
// are in ms.
type RunPlan struct {
	Keys    PlanKeys             `json:"keys"`
	Command []string             `json:"command"`
	Lease   lockcore.LeaseReport `json:"lease"`
	WaitMS  int64                `json:"wait_ms"`
	GraceMS int64                `json:"grace_ms"`
	// GraceClamped is true when --grace was lowered to fit the lease.
	GraceClamped bool `json:"grace_clamped"`
	// BudgetTermMS is when the budget sends SIGTERM, in ms after the acquire.
	BudgetTermMS int64 `json:"budget_term_ms"`
	// LostTermBeforeEndMS: when renewals fail, SIGTERM comes this long before
	// the lease could end (cancel margin + grace).
	LostTermBeforeEndMS int64 `json:"lost_term_before_end_ms"`
	// KillBeforeEndMS: the SIGKILL lands at least this long (the cancel
	// margin) before the lease could end and pass to another holder.
	KillBeforeEndMS int64 `json:"kill_before_end_ms"`
}

// PlanKeys are the lock and fence keys of a RunPlan, each with its bytes in
// hex when they are not UTF-8 (inspect.HexIfNotUTF8; JSON would show them
// as U+FFFD).
type PlanKeys struct {
	Lock     string `json:"lock"`
	LockHex  string `json:"lock_hex,omitempty"`
	Fence    string `json:"fence"`
	FenceHex string `json:"fence_hex,omitempty"`
}

// runLong is `lockctl run --help`'s text (docs/run.md has the manual).
const runLong = `Run a command while holding a Redis lock, the way a durable background task
should: the lease follows the policy (see 'lockctl lease') and is renewed
until the budget ends; the child gets its fencing token; the child is stopped
before the lease could pass to someone else; the lock is released
(owner-checked) when the child exits.

WRITES TO REDIS: acquire (SET NX PX of the lock key and INCR of its fence
counter, in one script), renewals (owner-checked PEXPIRE) and the release
(owner-checked DEL). The fence counter is never reset or deleted.

The key is built from VALUE with the key template (lock.field,
lock.key_template, lock.fence_template; default lock:OrderId:VALUE), or
given exactly with --key.

The child runs directly (through sh -c only with --shell), in its own
process group, with stdin, stdout and stderr passed through and, in its
environment:
  LOCKCTL_KEY       the lock key
  LOCKCTL_OWNER     this acquisition's owner token (32 hex characters)
  LOCKCTL_FENCE     the fencing token: send it with every write and have the
                    store refuse lower values
  LOCKCTL_DEADLINE  when the budget sends SIGTERM (RFC3339, UTC, ms)
lockctl's own password variables are removed from it (LOCKCTL_REDIS_PASSWORD,
LOCKCTL_REDIS_SENTINEL_PASSWORD, REDISCLI_AUTH, LOCKCTL_STORE_PASSWORD, and
LOCKCTL_REDIS_URL or LOCKCTL_REDIS_SENTINEL when they hold a password)
unless --pass-secrets.

When the lease is lost (renewal refused, or renewals failing until the lease
can no longer be proven), the budget ends or the renewal bound is reached,
the child's process group gets SIGTERM (and SIGCONT, should it be
stopped), then SIGKILL after --grace. When
renewals fail, SIGTERM comes cancel margin + grace before the lease could
end, so the SIGKILL lands before another holder could take over; a grace
that does not fit the lease is lowered (and said so). SIGINT, SIGTERM,
SIGQUIT and SIGHUP sent to lockctl are forwarded to the child, with a
SIGCONT should it be stopped; lockctl waits for it. One lockctl started with
ignored stays ignored (SIGHUP under nohup, SIGINT and SIGQUIT in a script's
background job). Should lockctl die (SIGKILL), a watchdog process it
starts with the child kills the child's process group; should lockctl be
stopped or starved past the lease (SIGSTOP, a long pause), the watchdog
stops the group by the lease's end as lockctl would have, and lockctl,
continued, exits 76 (see docs/run.md).

On a terminal (Linux), the child's process group gets the terminal: it can
read it, and Ctrl-C and Ctrl-Z reach it. Ctrl-Z (or SIGTSTP sent to
lockctl) stops lockctl with the child, and renewals stop with them. On fg
the child goes on only if the lease can still be proven with --grace to
spare; otherwise it is killed without running again (exit 76). In a
pipeline the child gets the terminal only once it reads it (a pager keeps
it until then). Where no shell can continue lockctl (it leads its session:
ssh -t, docker run -t), Ctrl-Z is ignored, as the kernel does there.
Started in the background (&), a child that reads the terminal stops the
job, and fg hands it the terminal.

Exit codes: the child's own on a normal exit (128+N if signal N ended it);
75 lock held by another owner; 76 lease lost; 124 budget or renewal bound
reached; 127 the command cannot be started; 2 usage; 3 Redis unreachable.`

const runExample = `  lockctl run order-demo-001 --budget 1200s -- ./import.sh --order order-demo-1
  lockctl run order-demo-001 --budget 30s --mode ordinary --wait 10s -- make fix
  lockctl run --key cron:nightly --budget 2h --shell -- \
    'pg_dump shop > "/backup/$LOCKCTL_FENCE.sql"'
  lockctl run order-demo-001 --budget 1200s --dry-run -o json -- ./import.sh`

// NewCmdRun returns `lockctl run`; runF replaces the run function in tests.
func NewCmdRun(f *Factory, runF func(*RunOptions) error) *cobra.Command {
	var budget, mode, wait, grace, key string
	var shell, dryRun, passSecrets bool
	cmd := &cobra.Command{
		Use:         "run (VALUE | --key KEY) --budget DURATION [flags] -- COMMAND [ARGS...]",
		Annotations: outputFormats(dataFormats),
		Short:       "Run a command under a renewed, fenced Redis lock (writes to Redis)",
		Long:        runLong,
		Example:     runExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := f.Output(dataFormats...)
			if err != nil {
				return err
			}
			opts := &RunOptions{IO: f.IO, Printer: f.newPrinter(format), Redis: f.Redis, Backoff: lockcore.DefaultBackoff, DryRun: dryRun, PassSecrets: passSecrets, Environ: f.IO.environ()}
			if err := emptyFlags(cmd, "key"); err != nil {
				return err
			}
			value, command, err := splitRunArgs(args, cmd.ArgsLenAtDash(), key != "", dryRun)
			if err != nil {
				return err
			}
			opts.KeysFor = func(cluster bool) (lockcore.Keys, error) { return f.keysSetting(value, key, cluster) }
			if opts.Keys, err = opts.KeysFor(false); err != nil {
				return err
			}
			if dryRun { // it connects to nothing, but refuses what the run would
				if _, _, _, err := f.redisSettings(); err != nil {
					return err
				}
				f.warnPasswordFlag()
			}
			if opts.Lease, err = leaseSetting(f, budget, mode); err != nil {
				return err
			}
			if opts.Wait, err = nonNegativeDuration("wait", wait); err != nil {
				return err
			}
			g, err := nonNegativeDuration("grace", grace)
			if err != nil {
				return err
			}
			if opts.Grace, err = graceSetting(opts.Lease, g); err != nil {
				return err
			}
			if opts.Grace < g {
				opts.GraceClamped = true
				which := "--grace"
				if !cmd.Flags().Changed("grace") {
					which = "the default --grace"
				}
				opts.GraceNote = fmt.Sprintf("lockctl: %s %s does not fit the %s lease: lowered to %s so the SIGKILL lands before the lease could pass to another holder\n",
					which, lockcore.FormatDuration(g), lockcore.FormatDuration(opts.Lease.Lease), lockcore.FormatDuration(opts.Grace))
			}
			opts.Command = command
			if shell && len(command) > 0 {
				opts.Command = []string{"/bin/sh", "-c", strings.Join(command, " ")}
			}
			if runF != nil {
				return runF(opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&budget, "budget", "", "execution budget of the command, e.g. 1200s (required)")
	fl.StringVar(&mode, "mode", string(lockcore.ModeTrusted), "trusted (lease renewed up to the bound) or ordinary (lease = budget, fixed)")
	fl.StringVar(&key, "key", "", "exact lock key, instead of VALUE and the key template")
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{string(lockcore.ModeTrusted), string(lockcore.ModeOrdinary)}, cobra.ShellCompDirectiveNoFileComp))
	f.addLockCompletion(cmd)
	// After "--" comes the command to run: the shell completes its files.
	values := cmd.ValidArgsFunction
	cmd.ValidArgsFunction = func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if f.completingAfterDash() {
			return nil, cobra.ShellCompDirectiveDefault
		}
		return values(c, args, toComplete)
	}
	fl.StringVar(&wait, "wait", "0s", "how long to retry while the lock is held (backoff with jitter; 0s: fail at once)")
	fl.StringVar(&grace, "grace", "5s", "time between SIGTERM and SIGKILL (lowered when it does not fit the lease)")
	fl.BoolVar(&shell, "shell", false, "run the command through /bin/sh -c (arguments joined by spaces)")
	fl.BoolVar(&passSecrets, "pass-secrets", false, "pass lockctl's password variables (LOCKCTL_REDIS_PASSWORD, REDISCLI_AUTH, ...) on to the command")
	fl.BoolVar(&dryRun, "dry-run", false, "print the keys and the lease plan; touch neither Redis nor the command")
	addKeyFlags(cmd)
	addPolicyFlags(cmd)
	return cmd
}

// splitRunArgs splits VALUE from the command after "--".
func splitRunArgs(args []string, dash int, haveKey, dryRun bool) (value string, command []string, err error) {
	before := args
	if dash >= 0 {
		before, command = args[:dash], args[dash:]
	}
	if len(command) == 0 && !dryRun {
		return "", nil, usageErrorf("no command: put the command to run after --, e.g. lockctl run order-demo-001 --budget 1200s -- ./import.sh")
	}
	value, err = lockValue(before, haveKey)
	if err != nil && len(before) > 1 && !haveKey { // run's own mistake: a command without its --
		return "", nil, usageErrorf("%v; put the command after --", err)
	}
	return value, command, err
}

// lockValue checks that exactly one of VALUE and --key was given.
func lockValue(args []string, haveKey bool) (string, error) {
	switch {
	case haveKey && len(args) > 0:
		return "", usageErrorf("give either VALUE or --key, not both (got VALUE %q)", args[0])
	case haveKey:
		return "", nil
	case len(args) == 0:
		return "", usageErrorf("no lock: give VALUE (e.g. order-demo-001) or --key KEY")
	case len(args) > 1:
		return "", usageErrorf("one VALUE expected, got %d (%s)", len(args), strings.Join(args, " "))
	case args[0] == "":
		return "", emptyValueError()
	}
	return args[0], nil
}

// keysSetting builds the lock and fence keys from VALUE and the key
// templates, or from an exact --key (the fence template still applies). With
// cluster set, templates and values that put the two keys on different hash
// slots are refused (exit 2, both slots named).
func (f *Factory) keysSetting(value, key string, cluster bool) (lockcore.Keys, error) {
	if key != "" {
		v := f.Config
		ks, err := lockcore.NewKeySpec(v.GetString(keyLockField), "{value}", v.GetString(keyFenceTemplate), cluster)
		if err != nil {
			return lockcore.Keys{}, f.templateError(err, "{value}", cluster)
		}
		return keysFor(ks, key, fmt.Sprintf("--key %q", key), cluster)
	}
	ks, err := f.keySpecSetting(cluster)
	if err != nil {
		return lockcore.Keys{}, err
	}
	return keysFor(ks, value, fmt.Sprintf("value %q", value), cluster)
}

// leaseSetting applies the configured policy to --budget and --mode.
func leaseSetting(f *Factory, budget, mode string) (lockcore.Lease, error) {
	if budget == "" {
		return lockcore.Lease{}, usageErrorf("--budget is required, e.g. --budget 1200s")
	}
	b, err := lockcore.ParsePositiveDuration(budget)
	if err != nil {
		return lockcore.Lease{}, usageErrorf("budget %s", err)
	}
	m, err := lockcore.ParseMode(mode)
	if err != nil {
		return lockcore.Lease{}, usageErrorf("%v", err)
	}
	if m == lockcore.ModeOrdinary {
		if err := renewFlagsUnused(f.cmd); err != nil {
			return lockcore.Lease{}, err
		}
	}
	// The lease of a real lock: a shorter one than the team's, from a
	// checkout's file, could pass the lock on while the work runs.
	if err := f.requireTrust("policy."); err != nil {
		return lockcore.Lease{}, err
	}
	p, err := f.policySetting()
	if err != nil {
		return lockcore.Lease{}, err
	}
	l, err := p.LeaseFor(b, m)
	if err != nil {
		return lockcore.Lease{}, usageErrorf("%v", err)
	}
	return l, nil
}

func nonNegativeDuration(name, s string) (time.Duration, error) {
	d, err := lockcore.ParseDuration(s)
	if err != nil {
		return 0, usageErrorf("%s %s", name, err)
	}
	if d < 0 {
		return 0, usageErrorf("%s %q must not be negative", name, s)
	}
	return d, nil
}

// graceSetting is lockcore's ClampGrace of grace as a usage error.
func graceSetting(l lockcore.Lease, grace time.Duration) (time.Duration, error) {
	g, err := l.ClampGrace(grace)
	var noGrace *lockcore.NoGraceError
	switch {
	case errors.As(err, &noGrace) && !noGrace.RenewTooLate():
		return 0, usageErrorf("%v; give a longer --budget", err)
	case err != nil:
		return 0, usageErrorf("%v", err)
	}
	return g, nil
}

func (opts *RunOptions) plan() RunPlan {
	return RunPlan{
		Keys:    PlanKeys{Lock: opts.Keys.Lock, LockHex: inspect.HexIfNotUTF8(opts.Keys.Lock), Fence: opts.Keys.Fence, FenceHex: inspect.HexIfNotUTF8(opts.Keys.Fence)},
		Command: append([]string{}, opts.Command...), Lease: opts.Lease.Report(),
		WaitMS: opts.Wait.Milliseconds(), GraceMS: opts.Grace.Milliseconds(), GraceClamped: opts.GraceClamped,
		BudgetTermMS:        opts.Lease.BudgetStop(opts.Grace).Milliseconds(),
		LostTermBeforeEndMS: (opts.Lease.CancelMargin + opts.Grace).Milliseconds(),
		KillBeforeEndMS:     opts.Lease.CancelMargin.Milliseconds(),
	}
}

// runPlanRows is the pure row builder of the --dry-run table.
func runPlanRows(p RunPlan) ([]string, [][]string) {
	ms := func(v int64) string { return lockcore.FormatDuration(time.Duration(v) * time.Millisecond) }
	renew := "no (fixed lease)"
	if p.Lease.Renewable {
		renew = fmt.Sprintf("every %s, bound %s", ms(*p.Lease.RenewEveryMS), ms(*p.Lease.RenewBoundMS))
	}
	grace := ms(p.GraceMS)
	if p.GraceClamped {
		grace += " (lowered to fit the lease)"
	}
	command := strings.Join(p.Command, " ")
	if command == "" {
		command = "-"
	}
	return []string{"setting", "value"}, [][]string{
		{"lock key", p.Keys.Lock},
		{"fence key", p.Keys.Fence},
		{"command", command},
		{"budget", fmt.Sprintf("%s (%s)", ms(p.Lease.BudgetMS), p.Lease.Mode)},
		{"lease", ms(p.Lease.LeaseMS)},
		{"renewed", renew},
		{"wait", ms(p.WaitMS)},
		{"grace", grace},
		{"budget SIGTERM", "at " + ms(p.BudgetTermMS) + " after the acquire"},
		{"lost SIGTERM", ms(p.LostTermBeforeEndMS) + " before the lease could end"},
		{"lost SIGKILL", ms(p.KillBeforeEndMS) + " before the lease could end"},
	}
}

// graceNote writes GraceNote, if any: not even an empty write, which
// stops a background lockctl under stty tostop (SIGTTOU).
func (opts *RunOptions) graceNote() {
	if opts.GraceNote != "" {
		fmt.Fprint(opts.IO.ErrOut, opts.GraceNote)
	}
}

func runRun(ctx context.Context, opts *RunOptions) error {
	if opts.DryRun {
		opts.graceNote()
		p := opts.plan()
		return opts.Printer.Print(p, func(t *TableView) {
			t.Line("dry run: nothing is written to Redis and the command is not started")
			t.Line("")
			header, rows := runPlanRows(p)
			t.Table(header, rows)
			for _, w := range p.Lease.Warnings {
				t.Line("%s %s", t.Styles().Level("warning"), w.Message)
			}
		})
	}
	// A message to a closed stderr (lockctl run ... 2>&1 | head -c 1) must
	// not end lockctl by SIGPIPE with the lock held and the child running:
	// notified (never read), SIGPIPE makes the write fail instead. Not
	// ignored, which the child would inherit; kept until lockctl exits,
	// past the last message, which Execute prints. A dry run holds nothing:
	// it dies of SIGPIPE as any other command.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	path, err := exec.LookPath(opts.Command[0])
	if err != nil {
		return &ExitError{Code: ExitCannotRun, Err: fmt.Errorf("cannot run %q: %v", opts.Command[0], errors.Unwrap(err))}
	}
	conn, err := opts.Redis(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if conn.Cluster && opts.KeysFor != nil {
		if opts.Keys, err = opts.KeysFor(true); err != nil {
			return err
		}
	}
	lock, err := lockcore.NewLocker(conn.Client).AcquireWait(ctx, opts.Keys, opts.Lease.Lease, opts.Wait, opts.Backoff)
	var held *lockcore.HeldError
	var badFence *lockcore.FenceCounterError
	switch {
	case errors.As(err, &held):
		return &ExitError{Code: ExitNotObtained, Err: heldMessage(held, opts.Wait)}
	case errors.As(err, &badFence): // the server answered: the keyspace is wrong, not the connection
		return &ExitError{Code: ExitUsage, Err: badFence, Hint: fmt.Sprintf("See it with: lockctl inspect --key %q", badFence.Key)}
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return redisError(conn.URL, err)
	}
	opts.graceNote()
	return runChild(ctx, opts, conn, lock, path)
}

// heldMessage says who holds the lock: owner, fence, remaining TTL.
func heldMessage(h *lockcore.HeldError, wait time.Duration) error {
	waited := "--wait 0s"
	if wait > 0 {
		waited = "after waiting " + lockcore.FormatDuration(wait)
	}
	if h.Type != "string" {
		return fmt.Errorf("lock not obtained (%s): %s holds a Redis %s, not a lock value; PTTL %s", waited, h.Key, h.Type, pttlText(h.PTTL))
	}
	who := fmt.Sprintf("value %q", h.Value)
	if h.Truncated() {
		who = fmt.Sprintf("a value of %d bytes beginning %q", h.Size, h.Value)
	} else if fence, owner, err := lockcore.ParseValue(h.Value); err == nil {
		who = fmt.Sprintf("owner %s (fence %d)", oneLineText(owner), fence)
	}
	return fmt.Errorf("lock not obtained (%s): %s is held by %s, PTTL %s", waited, h.Key, who, pttlText(h.PTTL))
}

func pttlText(d time.Duration) string {
	if d < 0 {
		return "none (no expiry)"
	}
	return lockcore.FormatDuration(d)
}

// afterChildStart runs between the child's start and the watch line: a
// no-op but in cmd's own tests, which stop lockctl there (freeze_test.go).
var afterChildStart = func() {}

// runChild runs the command under lock with the supervise package (which
// releases the lock) and turns how the child ended into run's exit code.
func runChild(ctx context.Context, opts *RunOptions, conn *RedisConn, lock *lockcore.Lock, path string) error {
	deadline := lock.AcquiredAt.Add(opts.Lease.BudgetStop(opts.Grace))
	env := append(childEnv(opts.Environ, opts.PassSecrets),
		"LOCKCTL_KEY="+lock.Keys.Lock,
		"LOCKCTL_OWNER="+lock.Owner,
		"LOCKCTL_FENCE="+strconv.FormatInt(lock.Fence, 10),
		"LOCKCTL_DEADLINE="+deadline.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	)
	res, err := supervise.Run(ctx, lock, supervise.Options{
		Path: path, Args: opts.Command, Env: env,
		Stdin: opts.IO.In, Stdout: opts.IO.Out, Stderr: opts.IO.ErrOut,
		Lease: opts.Lease, Grace: opts.Grace, Deadline: deadline, ReleaseTimeout: conn.Timeout,
		Notify:     func(e supervise.Event) { opts.say(e, conn, lock.Keys.Lock) },
		AfterStart: afterChildStart,
	})
	relErr := res.ReleaseErr
	var startErr *supervise.StartError
	switch {
	case errors.As(err, &startErr):
		return &ExitError{Code: ExitCannotRun, Err: fmt.Errorf("cannot run %q: %v", opts.Command[0], startErr.Err)}
	case err != nil:
		return err
	case res.Cause == nil:
		switch {
		case errors.Is(relErr, lockcore.ErrNotHeld):
			fmt.Fprintf(opts.IO.ErrOut, "lockctl: warning: %s was no longer held when the command exited (it expired or was taken over)\n", oneLineText(lock.Keys.Lock))
		case relErr != nil:
			fmt.Fprintf(opts.IO.ErrOut, "lockctl: warning: could not release %s: %s; it expires within %s\n", oneLineText(lock.Keys.Lock), conn.errLine(relErr), lockcore.FormatDuration(lock.Lease))
		}
		if code := supervise.ExitCode(res.State); code != 0 {
			return &ExitError{Code: code}
		}
		return nil
	}
	code := ExitLeaseLost
	if errors.Is(res.Cause, lockcore.ErrBudgetExceeded) || errors.Is(res.Cause, lockcore.ErrBoundReached) {
		code = ExitBudget
	}
	return &ExitError{Code: code, Err: fmt.Errorf("command stopped (%s), lock %s", res.State, releaseText(relErr))}
}

// say writes what the supervisor reports on stderr, one line each.
func (opts *RunOptions) say(e supervise.Event, conn *RedisConn, key string) {
	w := opts.IO.ErrOut
	switch e.Kind {
	case supervise.EventNoWatchdog:
		fmt.Fprintf(w, "lockctl: warning: no watchdog (%s): should lockctl die, what the command started runs on without the lock\n", oneLine(e.Err))
	case supervise.EventStopping:
		then := "SIGTERM sent to the command, SIGKILL in " + lockcore.FormatDuration(e.KillIn)
		if e.Late {
			then = "lockctl acted past the time the lease can be proven (starved or stopped): no grace left, SIGTERM and SIGKILL sent to the command"
		}
		fmt.Fprintf(w, "lockctl: %s; %s\n", oneLineText(stopReason(e.Cause, e.LastRenewErr, conn, opts.Lease, key)), then)
	case supervise.EventGraceKilled:
		fmt.Fprintf(w, "lockctl: the command did not exit within the grace; SIGKILL sent\n")
	case supervise.EventStoppedTooLong:
		fmt.Fprintf(w, "lockctl: lease lost: the job was stopped for longer than the lease of %s can be proven; the command was killed without being continued\n", oneLineText(key))
	case supervise.EventWatchdogStopped:
		fmt.Fprintf(w, "lockctl: lease lost: lockctl was stopped or starved past the time the lease of %s can be proven; its watchdog stopped the command\n", oneLineText(key))
	}
}

// stopReason says why the Keeper cancelled the work (a renewal's error
// with conn's secrets masked).
func stopReason(cause, lastRenewErr error, conn *RedisConn, l lockcore.Lease, key string) string {
	switch {
	case errors.Is(cause, lockcore.ErrBudgetExceeded) && !l.Renewable:
		return fmt.Sprintf("budget %s reached (the fixed lease ends with it: stopping cancel margin + grace early)", lockcore.FormatDuration(l.Budget))
	case errors.Is(cause, lockcore.ErrBudgetExceeded):
		return fmt.Sprintf("budget %s reached", lockcore.FormatDuration(l.Budget))
	case errors.Is(cause, lockcore.ErrBoundReached):
		return fmt.Sprintf("renewal bound %s reached", lockcore.FormatDuration(l.RenewBound))
	case errors.Is(lastRenewErr, lockcore.ErrNotHeld):
		return fmt.Sprintf("lease lost: %s is no longer ours (it expired or another owner holds it)", key)
	case lastRenewErr != nil:
		return fmt.Sprintf("lease lost: renewals of %s failed (%s) and the lease can no longer be proven", key, conn.errLine(lastRenewErr))
	}
	return fmt.Sprintf("lease lost: no renewal of %s succeeded in time (Redis unreachable or too slow)", key)
}

func releaseText(err error) string {
	switch {
	case err == nil:
		return "released"
	case errors.Is(err, lockcore.ErrNotHeld):
		return "no longer held"
	}
	return "not released (" + oneLine(err) + "); it expires on its own"
}
