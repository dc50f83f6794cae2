package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// WatchOptions are the inputs of `lockctl watch`.
type WatchOptions struct {
	IO      *IOStreams
	Printer *Printer
	Format  string
	Redis   func(ctx context.Context) (*RedisConn, error)
	Ctx     context.Context

	Values   []string
	Keys     []string
	KeySpec  func(cluster bool) (*lockcore.KeySpec, error)
	FenceFor func(lockKey string) string
	// Interval between samples; Duration 0 means until Ctrl-C.
	Interval   time.Duration
	Duration   time.Duration
	RenewBound time.Duration
	LeaseCap   time.Duration
	// Redlock, set for a redis+redlock:// URL, connects to every node;
	// RedlockLease is --lease (0: none).
	Redlock      func(ctx context.Context) (*RedlockConn, error)
	RedlockLease time.Duration
	// Permits is --permits: the most holders a semaphore may admit (0: unchecked).
	Permits int64
	// Pattern is --pattern: follow every lock it matches (watch_pattern.go);
	// ScanRate is --scan-rate in keyspace entries per second (0: spread).
	Pattern  string
	ScanRate int64
	// Declared are the layouts of the inspect.layouts file, compiled.
	Declared []inspect.Declared
}

// NewCmdWatch returns `lockctl watch`; runF replaces the run function in tests.
func NewCmdWatch(f *Factory, runF func(*WatchOptions) error) *cobra.Command {
	var keys []string
	var interval, duration, lease string
	var permits, scanRate int64
	var pattern string
	cmd := &cobra.Command{
		Use:         "watch [VALUE...] [--key KEY]... [--pattern GLOB]",
		Annotations: outputFormats(watchFormats),
		Short:       "Print one line per ownership event of lock keys (read-only)",
		Long: `Sample the lock key(s) every --interval for --duration (or until Ctrl-C) and
print one line per event:

  HELD / FREE          the state at the first sample
  ACQUIRED             the key appeared: a new owner
  RENEWED              a later expiry (or TTL), same owner
  RELEASED             the key went away well before its TTL
  EXPIRED              the key went away at its TTL
  TAKEOVER             the owner changed with no gap seen
  TTL_JUMP             an earlier expiry, or the TTL fell faster than time
                       passed
  ` + inspect.EventFenceBackwards + `      the fencing counter decreased
  RENEWED_PAST_BOUND   the same owner kept renewing past the renewal bound
  OVER_ADMITTED        a semaphore or shared lock admits more holders than it
                       may (a writer with company, or more than --permits)

Over a redis+redlock:// URL each node's events name the node, NODE_DOWN and
NODE_UP say when one stops or starts answering, and the quorum has its own:
QUORUM_HELD / QUORUM_FREE at the first sample, QUORUM_ACQUIRED, QUORUM_LOST
and SPLIT (docs/redlock.md).

--pattern GLOB follows every lock the glob matches instead (docs/monitoring.md):
repeated SCAN passes, each paced to --scan-rate keyspace entries per second
(default: DBSIZE / --interval, so a pass spreads over the interval, which
is then 10s), on every primary of a cluster; events between passes, and
FINDING / FINDING_CLEARED when a key's findings change; between passes
too when the server sends keyspace notifications (never required). Over a
redis+redlock:// URL every node is scanned, each key's quorum followed.

-o jsonl prints one JSON object per event. Read-only: each sample is the
same pipelined reads as inspect. A sample that fails (a dropped connection,
a Sentinel failover, a cluster resharding) is retried for up to --timeout,
with one line on stderr, before watch gives up with exit 3; so does a
--duration that ends while samples fail.`,
		Example: `  lockctl watch order-demo-001
  lockctl watch --key concurrent-test2 --interval 1s --renew-bound 1m -o jsonl
  lockctl watch order-demo-001 --duration 30s
  lockctl watch --pattern 'lock:*' --scan-rate 20000 -o jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			endOnSecondSignal(cmd.Context())
			format, err := f.Output(watchFormats...)
			if err != nil {
				return err
			}
			opts := &WatchOptions{IO: f.IO, Printer: f.newPrinter(format), Format: format, Redis: f.Redis, Ctx: cmd.Context(), Values: args, Keys: keys}
			if f.redlockConfigured() {
				opts.Redlock = f.Redlock
			}
			if opts.RedlockLease, err = f.redlockLease(lease); err != nil {
				return err
			}
			if err := checkWatchPattern(cmd, args, keys, pattern, scanRate, &interval); err != nil {
				return err
			}
			opts.Pattern, opts.ScanRate = pattern, scanRate
			if len(args) == 0 && len(keys) == 0 && pattern == "" {
				return usageErrorf("give a VALUE (e.g. order-demo-001), --key KEY or --pattern GLOB")
			}
			if err := checkValuesKeys(args, keys); err != nil {
				return err
			}
			if err := checkPermits(cmd, permits); err != nil {
				return err
			}
			opts.Permits = permits
			if opts.Interval, err = lockcore.ParsePositiveDuration(interval); err != nil {
				return usageErrorf("interval %s", err)
			}
			if duration != "" {
				if opts.Duration, err = lockcore.ParsePositiveDuration(duration); err != nil {
					return usageErrorf("duration %s", err)
				}
			}
			pol, err := f.policySetting()
			if err != nil {
				return err
			}
			opts.RenewBound, opts.LeaseCap = pol.RenewBound, pol.LeaseCap
			if opts.KeySpec, opts.FenceFor, err = f.lockKeySettings(); err != nil {
				return err
			}
			if opts.Declared, err = f.declaredLayouts(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return watchRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&keys, "key", nil, "exact Redis key to watch (repeatable)")
	f.addLockCompletion(cmd)
	fl.StringVar(&interval, "interval", "100ms", "time between samples")
	fl.StringVar(&duration, "duration", "", "stop after this long from the connection, between samples (the first is always taken; default: until Ctrl-C)")
	addRedlockLeaseFlag(cmd, &lease)
	addPermitsFlag(cmd, &permits)
	addWatchPatternFlags(cmd, &pattern, &scanRate)
	addKeyFlags(cmd)
	addPolicyFlags(cmd)
	return cmd
}

// watchWindow is --duration's context (none when d is 0). It counts from
// the connection and ends the loop between samples: the first sample is
// always taken, and one in flight is finished (a short --duration is no
// Redis timeout).
func watchWindow(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

func watchRun(opts *WatchOptions) error {
	if opts.Pattern != "" && opts.Redlock != nil {
		return redlockPatternRun(opts)
	}
	if opts.Pattern != "" {
		return watchPatternRun(opts)
	}
	if opts.Redlock != nil {
		return redlockWatchRun(opts)
	}
	conn, err := opts.Redis(opts.Ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := watchWindow(opts.Ctx, opts.Duration)
	defer cancel()
	iopts := &InspectOptions{Values: opts.Values, Keys: opts.Keys, KeySpec: opts.KeySpec, FenceFor: opts.FenceFor, LeaseCap: opts.LeaseCap, Permits: opts.Permits, Declared: opts.Declared}
	res, err := resolveKeys(iopts, conn.Cluster)
	if err != nil {
		return err
	}
	reader := newReader(iopts, conn, res.fences)
	differs := make(map[string]*inspect.Differ, len(res.keys))
	for _, k := range res.keys {
		differs[k] = inspect.NewDiffer(inspect.WatchOptions{RenewBound: opts.RenewBound})
	}
	enc := json.NewEncoder(opts.IO.Out)
	enc.SetEscapeHTML(false)
	st := opts.Printer.Styles
	tick := time.NewTicker(opts.Interval)
	defer tick.Stop()
	var failingSince time.Time
	var sampleErr error // the last sample's
	for {
		at := time.Now()
		locks, err := reader.Read(opts.Ctx, conn.Client, res.keys)
		sampleErr = err
		now := time.Now()
		switch {
		case err == nil && !failingSince.IsZero():
			fmt.Fprintf(opts.IO.ErrOut, "lockctl: watch: redis %s answers again after %s\n", conn.URL, lockcore.FormatDuration(now.Sub(failingSince).Truncate(time.Millisecond)))
			failingSince = time.Time{}
		case err == nil:
		case ctx.Err() != nil || !retryable(err) || (!failingSince.IsZero() && now.Sub(failingSince) > conn.Timeout):
			return watchEnd(opts, ctx, conn, err)
		case failingSince.IsZero():
			failingSince = now
			fmt.Fprintf(opts.IO.ErrOut, "lockctl: watch: redis %s: %s; retrying for up to %s (--timeout)\n", conn.URL, conn.errLine(err), lockcore.FormatDuration(conn.Timeout))
		}
		for _, l := range locks {
			sample := inspect.SampleOf(l, at)
			sample.Done = now
			for _, e := range differs[l.Key].Next(sample) {
				if opts.Format == formatJSONL {
					err = enc.Encode(e)
				} else {
					_, err = opts.Printer.Out.Write([]byte(watchLine(st, e) + "\n"))
				}
				if err != nil {
					return err
				}
			}
		}
		select {
		case <-ctx.Done():
			return watchEnd(opts, ctx, conn, sampleErr)
		case <-tick.C:
		}
	}
}

// retryable says whether a failed sample is worth repeating: a dropped
// connection, a primary being demoted or promoted (a Sentinel failover kills
// the old primary's clients; READONLY, LOADING, MASTERDOWN), a cluster
// resharding or down. Refused credentials or ACL permissions are final, and
// so is a server that is not the kind the settings name (clusterModeError).
func retryable(err error) bool {
	var ce *clusterModeError
	if errors.As(err, &ce) && ce.Code == ExitUsage { // a setting to change, not a passing state
		return false
	}
	return !redis.IsAuthError(err) && !redis.IsPermissionError(err)
}

// watchEnd maps how the sampling loop stopped, err being the last sample's
// error: Ctrl-C is an interruption, --duration elapsed after a good sample
// is success, anything else a Redis error (a watch whose samples all
// failed must not exit 0).
func watchEnd(opts *WatchOptions, ctx context.Context, conn *RedisConn, err error) error {
	switch {
	case opts.Ctx.Err() != nil:
		return opts.Ctx.Err()
	case ctx.Err() != nil && err == nil:
		return nil
	}
	return redisError(conn.URL, err)
}

// watchLine is the table format of one event.
func watchLine(st *Styles, e inspect.Event) string {
	return e.At + " " + watchWord(st, e.Event) + " " + oneLineText(e.Key) + ": " + oneLineText(e.Message)
}

// watchWord is an event's name in its colour: red for what breaks mutual
// exclusion, yellow for what deserves a look, green for a holder's progress.
func watchWord(st *Styles, word string) string {
	switch word {
	case inspect.EventTakeover, inspect.EventTTLJump, inspect.EventFenceBackwards, inspect.EventQuorumLost, inspect.EventSplit, inspect.EventOverAdmitted:
		return st.Error.Render(word)
	case inspect.EventRenewedPastBound, inspect.EventExpired, inspect.EventNodeDown:
		return st.Warn.Render(word)
	case inspect.EventAcquired, inspect.EventRenewed, inspect.EventHeld, inspect.EventQuorumAcquired, inspect.EventQuorumHeld:
		return st.OK.Render(word)
	}
	return word
}
