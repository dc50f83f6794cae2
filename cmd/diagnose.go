package cmd

import (
	"context"
	"errors"
	"strings"

	"github.com/lockctl/lockctl/diagnose"
	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/trial/storeapi"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// DiagnoseOptions are the inputs of `lockctl diagnose`.
type DiagnoseOptions struct {
	IO      *IOStreams
	Printer *Printer
	Ctx     context.Context
	// Redis connects on demand (Factory.Redis).
	Redis func(ctx context.Context) (*RedisConn, error)
	// Inspect carries the key and lease settings inspect reads the lease
	// with (its Values or Keys hold the one VALUE or --key, or neither).
	Inspect *InspectOptions
	PIDs    []int
	// Fence is --fence, OldValueFence the fence of --old-value; nil if not given.
	Fence, OldValueFence *int64
	// StoreURL and FenceQuery are --store and --fence-query ("" without).
	StoreURL, FenceQuery string
	// FailOnUnknown is --fail-on unknown.
	FailOnUnknown bool
}

// NewCmdDiagnose returns `lockctl diagnose`; runF replaces the run function in tests.
func NewCmdDiagnose(f *Factory, runF func(*DiagnoseOptions) error) *cobra.Command {
	var key, oldValue, failOn string
	var fence int64
	opts := &DiagnoseOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:         "diagnose [VALUE | --key KEY] [--pid PID]... [--fence N]",
		Annotations: outputFormats(dataFormats),
		Args:        cobra.MaximumNArgs(1),
		Short:       "An old task still runs: what it waits on, would its write land",
		Long: `Follow the procedure for an old task found still running after its lock
expired, in its order, read-only everywhere.

Step 1, the old holder. With --pid, for each process and thread: state,
wait channel and current syscall, its TCP connections with peers and queue
sizes, how long it has been alive, and for a 'lockctl run' child its
LOCKCTL_KEY and LOCKCTL_FENCE (no other variable is read). The peer of the
connection it is blocked on is "the external call". Without --pid: the
local processes holding a connection to this Redis server (CLIENT LIST
matched with local sockets, and those whose LOCKCTL_KEY is this key), with
the Redis side of each: age, idle time, last command, client name, library.
Connections from other hosts show only the Redis side; without Linux's /proc
only the Redis side is shown.

Step 2, the current lease: what 'lockctl inspect' says (layout, owner,
fence, TTL, findings), in the same JSON shape.

Step 3, the write boundary: the old holder's fence (--fence, --old-value,
or a lockctl run child's LOCKCTL_FENCE) against the newest fence the store
accepted (--fence-query, one SELECT of one column, on --store): refused
(the store has a newer one), accepted (the old holder's write would land)
or unknown (what to give is named).

The report ends with one line of advice. Exit 0 when nothing is unsafe, 1
for a stale holder whose next write would be accepted (with --fail-on
unknown, also one that cannot be ruled out), 2 for bad input, 3 when Redis
or the store cannot be reached.

Read-only: Redis gets TYPE, PTTL and inspect's other reads, CLIENT ID and
CLIENT LIST; the store query runs in a read-only transaction that is
rolled back. --store takes the URLs of 'lockctl trial --store', with the
database in the path; its password never appears in any output.`,
		Example: `  lockctl diagnose order-demo-001 --pid 4242
  # a lockctl run child: its key and fence come from its environment
  lockctl diagnose --pid "$(pgrep -f import.sh)"
  lockctl diagnose order-demo-001 --fence 34 --store postgres://app@db/shop \
    --fence-query "SELECT max(fence) FROM payments WHERE order_id = 'o-1'"
  # find the local holders through CLIENT LIST
  lockctl diagnose order-demo-001
  lockctl diagnose order-demo-001 --pid 4242 --fail-on unknown -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := f.Output(dataFormats...)
			if err != nil {
				return err
			}
			opts.Printer, opts.Ctx, opts.Redis = f.newPrinter(format), cmd.Context(), f.Redis
			if err := diagnoseFlags(f, cmd, opts, args, key, oldValue, failOn); err != nil {
				return err
			}
			if cmd.Flags().Changed("fence") {
				opts.Fence = &fence
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.StoreURL != "" && !storeapi.Linked() {
				return handOver(f, storeBinary, "diagnose --store")
			}
			return diagnoseRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&key, "key", "", "exact Redis key of the lock (instead of VALUE)")
	fl.IntSliceVar(&opts.PIDs, "pid", nil, "process of the old holder (repeatable, or comma-separated); default: find the local processes connected to Redis")
	fl.Int64Var(&fence, "fence", 0, "the old holder's fencing token (default: a lockctl run child's LOCKCTL_FENCE)")
	fl.StringVar(&oldValue, "old-value", "", "the lock value the old holder wrote (<fence>:<owner>), to take its fence from")
	fl.StringVar(&opts.StoreURL, "store", "", "the write boundary's database: postgres://USER@HOST:PORT/DB, mysql://USER@HOST:PORT/DB (MariaDB too) or sqlite:PATH of the file")
	fl.StringVar(&opts.FenceQuery, "fence-query", "", "one SELECT returning the newest fence the store accepted for this resource (one column)")
	fl.StringVar(&failOn, "fail-on", "", "exit 1 also when an unsafe holder cannot be ruled out: unknown")
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"unknown"}, cobra.ShellCompDirectiveNoFileComp))
	f.addLockCompletion(cmd)
	addKeyFlags(cmd)
	addPolicyFlags(cmd, "lease-cap")
	return cmd
}

// diagnoseFlags checks the flags (exit 2) and fills opts.
func diagnoseFlags(f *Factory, cmd *cobra.Command, opts *DiagnoseOptions, args []string, key, oldValue, failOn string) error {
	if err := emptyFlags(cmd, "key", "old-value", "store", "fence-query", "fail-on"); err != nil {
		return err
	}
	if len(args) == 0 && key == "" && len(opts.PIDs) == 0 {
		return usageErrorf("give a VALUE (e.g. order-demo-001), --key KEY, or --pid of a lockctl run child")
	}
	if len(args) > 0 && key != "" {
		return usageErrorf("give a VALUE or --key, not both: diagnose looks at one lock")
	}
	if len(args) > 0 && args[0] == "" {
		return emptyValueError()
	}
	switch failOn {
	case "", "unknown":
		opts.FailOnUnknown = failOn != ""
	default:
		return usageErrorf("fail-on %q is not accepted; accepted: unknown (accepted holders always exit 1)", failOn)
	}
	if (opts.StoreURL == "") != (opts.FenceQuery == "") {
		return usageErrorf("--store and --fence-query go together: the database and the SELECT of the newest fence it accepted")
	}
	if opts.StoreURL != "" {
		f.secrets = append(f.secrets, storeSecrets(opts.StoreURL)...)
	}
	if err := diagnose.CheckPIDs(opts.PIDs); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	io := &InspectOptions{Values: args}
	if key != "" {
		io.Keys = []string{key}
	}
	pol, err := f.policySetting()
	if err != nil {
		return err
	}
	io.LeaseCap = pol.LeaseCap
	if io.KeySpec, io.FenceFor, err = f.lockKeySettings(); err != nil {
		return err
	}
	io.IsFenceKey = fenceMatcher(f.Config.GetString(keyFenceTemplate))
	opts.Inspect = io
	if oldValue != "" {
		if opts.OldValueFence = diagnose.FenceOfValue(key, []byte(oldValue)); opts.OldValueFence == nil {
			return usageErrorf("--old-value %q carries no fence; accepted: the value <fence>:<owner> the old holder wrote (inspect's owner column shows its owner)", oldValue)
		}
	}
	return nil
}

func diagnoseRun(opts *DiagnoseOptions) error {
	ctx := opts.Ctx
	do := diagnose.Options{PIDs: opts.PIDs, Fence: opts.Fence, OldValueFence: opts.OldValueFence}
	if opts.StoreURL != "" {
		b, err := storeapi.OpenBoundary(ctx, opts.StoreURL)
		if err != nil {
			return storeError(err)
		}
		defer b.Close()
		scheme, _, _ := strings.Cut(opts.StoreURL, ":")
		do.Store = strings.ToLower(scheme)
		do.NewestFence = func(ctx context.Context) (*int64, error) {
			n, err := b.NewestFence(ctx, opts.FenceQuery)
			if err != nil {
				return nil, storeError(err)
			}
			return n, nil
		}
	}
	conn, err := opts.Redis(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	res, err := resolveKeys(opts.Inspect, conn.Cluster)
	if err != nil {
		return err
	}
	if len(res.keys) > 0 {
		do.Key = res.keys[0]
	}
	do.Lease = func(ctx context.Context, key string) (inspect.Lock, error) {
		reader := newReader(opts.Inspect, conn, res.fences)
		reader.RecheckSubsecond = true
		locks, err := reader.Read(ctx, conn.Client, []string{key})
		if err != nil {
			return inspect.Lock{}, readError(ctx, conn, err)
		}
		return locks[0], nil
	}
	do.Clients = func(ctx context.Context) (string, int64, error) {
		// One connection for both, so lockctl's own entry can be left out.
		var id *redis.IntCmd
		var list *redis.StringCmd
		_, err := conn.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
			id, list = p.ClientID(ctx), p.ClientList(ctx)
			return nil
		})
		if err != nil {
			return "", 0, readError(ctx, conn, err)
		}
		return list.Val(), id.Val(), nil
	}
	rep, err := diagnose.Run(ctx, do)
	switch {
	case errIsInput(err):
		return &ExitError{Code: ExitUsage, Err: err}
	case err != nil:
		return err
	}
	if err := opts.Printer.Print(rep, func(t *TableView) { diagnoseTable(t, rep) }); err != nil {
		return err
	}
	if rep.Unsafe(opts.FailOnUnknown) {
		return checkFailed()
	}
	return nil
}

// errIsInput reports the domain's bad-input errors (exit 2).
func errIsInput(err error) bool {
	return errors.Is(err, diagnose.ErrNoProcess) || errors.Is(err, diagnose.ErrNoKey)
}
