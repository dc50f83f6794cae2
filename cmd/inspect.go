package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

const formatJSONL = "jsonl"

// InspectOptions are the inputs of `lockctl inspect`.
type InspectOptions struct {
	IO      *IOStreams
	Printer *Printer
	Format  string
	// Redis connects on demand (Factory.Redis).
	Redis func(ctx context.Context) (*RedisConn, error)
	Ctx   context.Context

	Values []string
	Keys   []string
	// KeySpec builds keys from Values; resolved once connected (cluster rules).
	KeySpec func(cluster bool) (*lockcore.KeySpec, error)
	// FenceFor gives the fence counter key of a lock key met without its
	// value (--key, --pattern).
	FenceFor func(lockKey string) string
	// IsFenceKey tells a fence counter of the configured fence template met
	// on its own (fenceMatcher).
	IsFenceKey func(key string) bool
	Search     bool
	Limit      int
	Pattern    string
	Count      int64
	// FailOn is "", "warning" or "error".
	FailOn      string
	LeaseCap    time.Duration
	ExpectOwner []byte
	// Redlock, set for a redis+redlock:// URL, connects to every node
	// (Factory.Redlock) instead of Redis; RedlockLease is --lease (0: none).
	Redlock      func(ctx context.Context) (*RedlockConn, error)
	RedlockLease time.Duration
	// Permits is --permits: the most holders a semaphore may admit (0: unchecked).
	Permits int64
}

// NewCmdInspect returns `lockctl inspect`; runF replaces the run function in tests.
func NewCmdInspect(f *Factory, runF func(*InspectOptions) error) *cobra.Command {
	var keys []string
	var search bool
	var limit int
	var pattern, failOn, owner, lease string
	var count, permits int64
	cmd := &cobra.Command{
		Use:         "inspect [VALUE...] [--key KEY]... [--pattern GLOB]",
		Annotations: outputFormats(inspectFormats),
		Short:       "Show who holds a lock, which library wrote it and what is wrong with it (read-only)",
		Long: `Read lock keys without writing a byte and show, for each: type, PTTL and
absolute expiry, the library that wrote it (with confidence certain, likely
or guess), the owner token (printable, else hex), holder details, fencing
token and counter, waiters, and findings with a severity:

  NO_TTL CONSTANT_OWNER NOT_A_LOCK LEASE_OVER_CAP TTL_UNIT_MIXUP
  SUBSECOND_LEASE NO_FENCE FENCE_MISMATCH CROSS_SLOT BINARY_VALUE WRONG_TYPE
  ABSENT OVER_ADMITTED STALE_HOLDERS

A value whose shape several libraries write is a guess that names them all
("node-redlock or redis-py"; JSON: layout.candidates).

A semaphore or shared (read/write) lock (redis-semaphore, Symfony Lock,
Redisson) lists every holder with its age or lease and the permits in use;
--permits N checks that no more than N are taken.

A VALUE is a business value (order-demo-001) turned into the lock key by the
configured key template (lock.key_template, lock.field); --key takes an exact
Redis key. --search also finds keys containing each value (SCAN MATCH, the
value glob-escaped). --pattern scans the keyspace (SCAN, never KEYS, on every
primary of a cluster), one row per lock sorted by remaining TTL plus a
summary; -o jsonl streams one lock per line. Ctrl-C stops a scan cleanly
with what was read.

Over a redis+redlock:// URL (3 to 9 independent nodes) every node is read at
once: per key one row with the quorum (owner on a majority, nodes holding it,
validity) and its nodes beneath, and the findings NO_QUORUM SPLIT_OWNERS
MINORITY_HOLDER TTL_SKEW NODE_UNREACHABLE (docs/redlock.md).

Read-only: only TYPE, PTTL, PEXPIRETIME, OBJECT IDLETIME, STRLEN, GETRANGE,
HLEN/HSCAN, LLEN/LRANGE, SCARD/SSCAN, ZCARD/ZRANGE, SCAN and DBSIZE are sent.`,
		Example: `  lockctl inspect order-demo-001
  lockctl inspect --key lock:OrderId:order-demo-001 -o json
  lockctl inspect --key 'job-lock:default:report' --key concurrent-test2
  lockctl inspect --key semaphore:exports --permits 3
  lockctl inspect --pattern 'lock:*' --fail-on error
  lockctl inspect --pattern '*' -o jsonl > locks.jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := f.Output(inspectFormats...)
			if err != nil {
				return err
			}
			if err := emptyFlags(cmd, "pattern"); err != nil {
				return err
			}
			opts := &InspectOptions{IO: f.IO, Printer: f.newPrinter(format), Format: format, Redis: f.Redis, Ctx: cmd.Context(),
				Values: args, Keys: keys, Search: search, Limit: limit, Pattern: pattern, Count: count}
			if f.redlockConfigured() {
				opts.Redlock = f.Redlock
			}
			if opts.RedlockLease, err = f.redlockLease(lease); err != nil {
				return err
			}
			if err := checkInspectArgs(opts); err != nil {
				return err
			}
			if err := checkPermits(cmd, permits); err != nil {
				return err
			}
			opts.Permits = permits
			if failOn != "" {
				atWarn, err := failOnLevel(failOn, "error", "warning")
				if err != nil {
					return err
				}
				opts.FailOn = string(inspect.SeverityError)
				if atWarn {
					opts.FailOn = string(inspect.SeverityWarning)
				}
			}
			pol, err := f.policySetting()
			if err != nil {
				return err
			}
			opts.LeaseCap = pol.LeaseCap
			if err := emptyFlags(cmd, "owner"); err != nil {
				return err
			}
			if opts.ExpectOwner, err = parseOwner(owner); err != nil {
				return err
			}
			if opts.KeySpec, opts.FenceFor, err = f.lockKeySettings(); err != nil {
				return err
			}
			opts.IsFenceKey = fenceMatcher(f.Config.GetString(keyFenceTemplate))
			if runF != nil {
				return runF(opts)
			}
			return inspectRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&keys, "key", nil, "exact Redis key to inspect (repeatable)")
	f.addLockCompletion(cmd)
	fl.BoolVar(&search, "search", false, "also find keys containing each VALUE (SCAN MATCH *VALUE*)")
	fl.IntVar(&limit, "limit", 100, "most keys --search reports per value")
	fl.StringVar(&pattern, "pattern", "", "scan keys matching this SCAN MATCH glob, e.g. 'lock:*'")
	fl.Int64Var(&count, "count", inspect.DefaultScanCount, "SCAN COUNT hint for --pattern and --search")
	fl.StringVar(&failOn, "fail-on", "", "exit 1 when a finding of this severity or worse exists: error or warning ("+failOnAliases+")")
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"error", "warning"}, cobra.ShellCompDirectiveNoFileComp))
	fl.StringVar(&owner, "owner", "", "expected owner: the owner token (of a value <fence>:<owner>, the part after the colon; LOCKCTL_OWNER of run) or the whole stored value, compared byte for byte (hex:... for raw bytes); exit 1 unless that owner holds the lock (another owner, or no key)")
	addRedlockLeaseFlag(cmd, &lease)
	addPermitsFlag(cmd, &permits)
	addKeyFlags(cmd)
	addPolicyFlags(cmd)
	return cmd
}

func checkInspectArgs(opts *InspectOptions) error {
	if len(opts.Values) == 0 && len(opts.Keys) == 0 && opts.Pattern == "" {
		return usageErrorf("give a VALUE (e.g. order-demo-001), --key KEY or --pattern GLOB")
	}
	if err := checkValuesKeys(opts.Values, opts.Keys); err != nil {
		return err
	}
	if opts.Search && len(opts.Values) == 0 {
		return usageErrorf("--search needs a VALUE to search for")
	}
	if opts.Pattern != "" && (len(opts.Values) > 0 || len(opts.Keys) > 0) {
		return usageErrorf("--pattern scans the keyspace on its own; give it without a VALUE or --key (run those as another inspect)")
	}
	if opts.Pattern != "" {
		if err := checkGlob("pattern", opts.Pattern); err != nil {
			return err
		}
	}
	if opts.Limit < 1 {
		return usageErrorf("limit %d must be at least 1", opts.Limit)
	}
	if opts.Count < 1 {
		return usageErrorf("count %d must be at least 1", opts.Count)
	}
	return nil
}

// checkValuesKeys refuses an empty VALUE or --key (inspect, watch).
func checkValuesKeys(values, keys []string) error {
	for _, v := range values {
		if v == "" {
			return emptyValueError()
		}
	}
	for _, k := range keys {
		if k == "" {
			return emptyFlagError("key")
		}
	}
	return nil
}

// lockKeySettings checks the lock.* templates now (a bad one is exit 2
// before connecting) and returns how to build keys once the connection says
// whether it is a cluster, and the fence key of a key met without its value.
func (f *Factory) lockKeySettings() (func(cluster bool) (*lockcore.KeySpec, error), func(string) string, error) {
	if _, err := f.keySpecSetting(false); err != nil {
		return nil, nil, err
	}
	return f.keySpecSetting, fenceFor(f.Config.GetString(keyLockField), f.Config.GetString(keyFenceTemplate)), nil
}

// fenceFor returns the fence counter key of a lock key met without its
// business value: the configured fence template when it needs only {key}
// and {field}, else the default rule (lockcore.FenceKeyFor).
func fenceFor(field, tmpl string) func(string) string {
	if tmpl == "" || strings.Contains(tmpl, "{value}") {
		return lockcore.FenceKeyFor
	}
	t, err := lockcore.ParseTemplate(tmpl, "", "field", "value", "key")
	if err != nil {
		return lockcore.FenceKeyFor
	}
	if field == "" {
		field = lockcore.DefaultField
	}
	return func(k string) string { return t.Expand(map[string]string{"key": k, "field": field}) }
}

// fenceMatcher reports whether a key met on its own (--key, --pattern) can
// be a counter of the fence template tmpl: the fixed key, or a key with the
// template's literal start and end ("{key%:Lease}:FencingToken" matches
// "…:FencingToken"); nil without a template (the built-in names only).
func fenceMatcher(tmpl string) func(string) bool {
	t, err := lockcore.ParseTemplate(tmpl, "", "field", "value", "key")
	if tmpl == "" || err != nil {
		return nil
	}
	return t.MayBuild
}

// resolved is what a single-key inspect reads: the keys in order and the
// fence key of each lock key built from a value.
type resolved struct {
	keys   []string
	fences map[string]string
}

func resolveKeys(opts *InspectOptions, cluster bool) (*resolved, error) {
	ks, err := opts.KeySpec(cluster)
	if err != nil {
		return nil, err
	}
	r := &resolved{fences: map[string]string{}}
	seen := map[string]bool{}
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			r.keys = append(r.keys, k)
		}
	}
	for _, v := range opts.Values {
		k, err := keysFor(ks, v, fmt.Sprintf("value %q", v), cluster)
		if err != nil {
			return nil, err
		}
		if k.Lock == "" {
			return nil, usageErrorf("the key template builds an empty key for value %q", v)
		}
		r.fences[k.Lock] = k.Fence
		add(k.Lock)
	}
	for _, k := range opts.Keys {
		add(k)
	}
	return r, nil
}

func newReader(opts *InspectOptions, conn *RedisConn, fences map[string]string) *inspect.Reader {
	return &inspect.Reader{Options: inspect.Options{
		LeaseCap: opts.LeaseCap,
		Cluster:  conn.Cluster,
		FenceKey: func(lockKey string) string {
			if f, ok := fences[lockKey]; ok {
				return f
			}
			if opts.FenceFor != nil {
				return opts.FenceFor(lockKey)
			}
			return lockcore.FenceKeyFor(lockKey)
		},
		ExpectOwner: opts.ExpectOwner,
		IsFenceKey:  opts.IsFenceKey,
		Permits:     opts.Permits,
	}}
}

func inspectRun(opts *InspectOptions) error {
	if opts.Redlock != nil {
		return redlockInspectRun(opts)
	}
	ctx := opts.Ctx
	conn, err := opts.Redis(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if opts.Pattern != "" {
		return inspectScan(opts, conn)
	}
	res, err := resolveKeys(opts, conn.Cluster)
	if err != nil {
		return err
	}
	reader := newReader(opts, conn, res.fences)
	reader.RecheckSubsecond = true
	keys := res.keys
	if opts.Search {
		found, err := searchKeys(ctx, conn, reader, opts)
		if err != nil {
			return err
		}
		for _, k := range found {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	locks, err := reader.Read(ctx, conn.Client, keys)
	if err != nil {
		return readError(ctx, conn, err)
	}
	return printReport(opts, inspect.NewReport(locks), false)
}

// searchKeys finds keys containing each value with SCAN MATCH *value*.
func searchKeys(ctx context.Context, conn *RedisConn, reader *inspect.Reader, opts *InspectOptions) ([]string, error) {
	var out []string
	for _, v := range opts.Values {
		so := inspect.ScanOptions{Pattern: "*" + inspect.GlobEscape(v) + "*", Count: opts.Count, Limit: opts.Limit}
		err := reader.Scan(ctx, conn.Client, so, func(l inspect.Lock) error {
			out = append(out, l.Key)
			return nil
		})
		if err != nil {
			return nil, readError(ctx, conn, err)
		}
	}
	sort.Strings(out)
	return out, nil
}

func readError(ctx context.Context, conn *RedisConn, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return redisError(conn.URL, err)
}

// inspectScan is --pattern: SCAN the keyspace, stream (jsonl) or collect,
// sort by TTL and summarise.
func inspectScan(opts *InspectOptions, conn *RedisConn) error {
	ctx := opts.Ctx
	reader := newReader(opts, conn, nil)
	reader.Light = true
	reader.MaxValueBytes = inspect.ScanMaxValueBytes
	// A scan allocates per key but keeps little (jsonl streams): collect
	// garbage less often, and more often again near 96 MB of heap.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(96 << 20))
	so := inspect.ScanOptions{Pattern: opts.Pattern, Count: opts.Count}
	if opts.IO.ErrTTY {
		if total, err := conn.Client.DBSize(ctx).Result(); err == nil && total > 0 {
			bar := progressbar.NewOptions64(total, progressbar.OptionSetWriter(opts.IO.ErrOut),
				progressbar.OptionSetDescription("scanning "+opts.Pattern), progressbar.OptionShowCount(),
				progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
			so.Progress = func(walked int64) { _ = bar.Set64(min(walked, total)) }
			defer func() { _ = bar.Finish() }()
		}
	}
	var locks []inspect.Lock
	sum := inspect.NewSummary()
	out := bufio.NewWriterSize(opts.IO.Out, 64<<10)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	emit := func(l inspect.Lock) error {
		locks = append(locks, l)
		return nil
	}
	if opts.Format == formatJSONL {
		// Streamed: one line per lock as read, memory stays flat.
		emit = func(l inspect.Lock) error {
			sum.Add(&l)
			return enc.Encode(l)
		}
	}
	err := reader.Scan(ctx, conn.Client, so, emit)
	var bounded *inspect.ScanBoundError
	partial := errors.As(err, &bounded) // printed as found, then exit 3
	interrupted := errors.Is(err, context.Canceled) && ctx.Err() != nil || partial
	if err != nil && !interrupted {
		_ = out.Flush()
		return readError(ctx, conn, err)
	}
	var perr error
	if opts.Format == formatJSONL {
		sum.Interrupted = interrupted
		perr = enc.Encode(jsonlSummary{sum})
		if ferr := out.Flush(); perr == nil {
			perr = ferr
		}
		if perr == nil && !interrupted {
			perr = failOn(opts.FailOn, sum.BySeverity)
		}
	} else {
		inspect.SortByTTL(locks)
		rep := inspect.NewReport(locks)
		rep.Summary.Interrupted = interrupted
		perr = printReport(opts, rep, true)
	}
	switch {
	case partial && perr == nil:
		return redisError(conn.URL, err)
	case interrupted && !partial:
		return ctx.Err()
	}
	return perr
}

// jsonlSummary is the last line of `inspect -o jsonl`.
type jsonlSummary struct {
	Summary inspect.Summary `json:"summary"`
}

// writeJSONL prints `-o jsonl`: one JSON object per lock (a Lock, or a
// QuorumLock over Redlock nodes), then the summary line.
func writeJSONL[L any](w io.Writer, locks []L, sum inspect.Summary) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, l := range locks {
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return enc.Encode(jsonlSummary{sum})
}

// failOn returns checkFailed when a lock's worst finding reaches level.
func failOn(level string, bySeverity map[string]int) error {
	if level == "" {
		return nil
	}
	want := inspect.Severity(level).Rank()
	for sev, n := range bySeverity {
		if n > 0 && inspect.Severity(sev).Rank() >= want {
			return checkFailed()
		}
	}
	return nil
}

func printReport(opts *InspectOptions, rep inspect.Report, summary bool) error {
	var err error
	if opts.Format == formatJSONL {
		err = writeJSONL(opts.IO.Out, rep.Locks, rep.Summary)
	} else {
		err = opts.Printer.Print(rep, func(t *TableView) { inspectTable(t, rep, summary) })
	}
	if err != nil {
		return err
	}
	if rep.Summary.Interrupted {
		return nil
	}
	for _, l := range rep.Locks {
		if l.OwnerCheck == "NOT_OWNED" {
			return checkFailed() // as unlock --owner: a script can trust exit 0
		}
	}
	return failOn(opts.FailOn, rep.Summary.BySeverity)
}

func inspectTable(t *TableView, rep inspect.Report, summary bool) {
	st := t.Styles()
	header, rows := inspectRows(rep.Locks)
	if len(rows) > 0 {
		t.Table(header, rows)
	}
	for _, l := range rep.Locks {
		if d := holderLine(l); d != "" {
			t.Line("%s: %s", oneLineText(l.Key), oneLineText(d))
		}
		if d := sharedLine(l); d != "" {
			t.Line("%s: %s", oneLineText(l.Key), d)
		}
	}
	for _, l := range rep.Locks {
		for _, f := range l.Findings {
			t.Line("%s %s %s: %s; %s", st.Level(string(f.Severity)), f.Code, oneLineText(l.Key), oneLineText(f.Message), f.Reason)
		}
	}
	if summary {
		t.Line("%s", summaryLine(rep.Summary))
	}
}

// inspectRows is the pure row builder of the inspect table.
func inspectRows(locks []inspect.Lock) ([]string, [][]string) {
	header := []string{"key", "type", "ttl", "expires at", "layout", "owner", "fence", "findings"}
	rows := make([][]string, 0, len(locks))
	for _, l := range locks {
		ttl := "-"
		switch {
		case l.PTTLMS >= 0:
			ttl = inspect.FormatTTL(l.PTTLMS)
		case l.PTTLMS == -1:
			ttl = "none"
		}
		exp := "-"
		if l.ExpiresAt != nil {
			exp = *l.ExpiresAt
		}
		layout := "-"
		switch {
		case l.Role != "":
			layout = l.Layout.Name + " " + l.Role
		case l.Exists:
			layout = l.Layout.Label() + " (" + string(l.Layout.Confidence) + ")"
		}
		owner := oneLineText(l.Owner)
		if owner == "" && l.OwnerHex != "" {
			owner = "hex:" + l.OwnerHex
		}
		if r := []rune(owner); len(r) > 40 {
			owner = string(r[:39]) + "…"
		}
		if owner == "" {
			owner = "-"
		}
		codes := make([]string, len(l.Findings))
		for i, f := range l.Findings {
			codes[i] = f.Code
		}
		findings := strings.Join(codes, ",")
		if findings == "" {
			findings = "-"
		}
		rows = append(rows, []string{oneLineText(l.Key), l.Type, ttl, exp, layout, owner, fenceCell(l.Fence), findings})
	}
	return header, rows
}

func fenceCell(f *inspect.Fence) string {
	if f == nil {
		return "-"
	}
	n := func(p *int64) string {
		if p == nil {
			return "?"
		}
		return strconv.FormatInt(*p, 10)
	}
	return n(f.Value) + "/" + n(f.Counter)
}

// holderLine lists what the layout says about the holder.
func holderLine(l inspect.Lock) string {
	var parts []string
	if h := l.Holder; h != nil {
		for _, kv := range [][2]string{{"host", h.Host}, {"client", h.ClientID}, {"thread", h.Thread}, {"job", h.JobID},
			{"mode", h.Mode}, {"metadata", h.Metadata}, {"acquired", h.AcquiredAt}, {"value expires", h.ValueExpiresAt}} {
			if kv[1] != "" {
				parts = append(parts, kv[0]+" "+kv[1])
			}
		}
		if h.PID != 0 {
			parts = append(parts, "pid "+strconv.FormatInt(h.PID, 10))
		}
	}
	if l.HoldCount != nil {
		parts = append(parts, "hold count "+strconv.FormatInt(*l.HoldCount, 10))
	}
	if l.Fence != nil && l.Fence.CounterKey != "" {
		parts = append(parts, "fence counter "+l.Fence.CounterKey)
	}
	if len(l.Waiters) > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting: %s", len(l.Waiters), strings.Join(l.Waiters, ", ")))
	}
	if l.OwnerCheck != "" {
		parts = append(parts, l.OwnerCheck)
	}
	return strings.Join(parts, ", ")
}

// plural is "1 lock" or "n locks".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func summaryLine(s inspect.Summary) string {
	line := plural(s.Locks, "lock", "locks")
	if s.Companions > 0 {
		line += " (+" + plural(s.Companions, "companion key", "companion keys") + ")"
	}
	if s.Interrupted {
		line += " (interrupted: partial)"
	}
	if len(s.ByLayout) > 0 {
		line += "; layouts: " + countList(s.ByLayout)
	}
	if len(s.ByFinding) > 0 {
		line += "; findings: " + countList(s.ByFinding)
	}
	return line
}

func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
