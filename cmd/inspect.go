package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/lockcore"
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
	// Sort is --pattern's row order: "ttl" (the table prints once the scan
	// ends) or "scan" (rows print as the scan reads them).
	Sort    string
	Limit   int
	Pattern string
	Count   int64
	// FailOn is "", "warning" or "error".
	FailOn string
	// FailOnAbsent makes a key that does not exist exit 1 (--fail-on
	// absent), so that a script can tell "absent" from "fine".
	FailOnAbsent bool
	LeaseCap     time.Duration
	ExpectOwner  []byte
	// Redlock, set for a redis+redlock:// URL, connects to every node
	// (Factory.Redlock) instead of Redis; RedlockLease is --lease (0: none).
	Redlock      func(ctx context.Context) (*RedlockConn, error)
	RedlockLease time.Duration
	// Permits is --permits: the most holders a semaphore may admit (0: unchecked).
	Permits int64
	// Declared are the layouts of the inspect.layouts file, compiled.
	Declared []inspect.Declared
	// Quiet is --quiet: no progress bar on a terminal's stderr.
	Quiet bool
}

const inspectLong = `Read lock keys without writing a byte and show, for each: type, PTTL and
absolute expiry, the library that wrote it (with confidence certain, likely
or guess), the owner token (printable, else hex), holder details, fencing
token and counter, waiters, and findings with a severity:

  NO_TTL CONSTANT_OWNER NOT_A_LOCK LEASE_OVER_CAP TTL_UNIT_MIXUP
  SUBSECOND_LEASE NO_FENCE FENCE_MISMATCH CROSS_SLOT BINARY_VALUE WRONG_TYPE
  ABSENT OVER_ADMITTED STALE_HOLDERS

A value whose specific shape a few libraries write is a guess naming them
("node-redis-warlock or redsync"; JSON: layout.candidates). A key no layout
explains is "unknown" with its shape described (a UUID, random hex, a
counter, a zset scored by times...; JSON: layout.shape, layout.description,
layout.seen_in); only what is true whatever library wrote it is an error.
Your own layouts: inspect.layouts in the configuration (docs/layouts.md).

A semaphore or shared (read/write) lock (redis-semaphore, Symfony Lock,
Redisson) lists every holder with its age or lease and the permits in use;
--permits N checks that no more than N are taken.

A VALUE is a business value (order-demo-001) turned into the lock key by the
configured key template (lock.key_template, lock.field); --key takes an exact
Redis key. --search also finds keys containing each value (SCAN MATCH, the
value glob-escaped). --pattern scans the keyspace (SCAN, never KEYS, on every
primary of a cluster), one row per lock sorted by remaining TTL plus a
summary: the table prints once the scan ends, --sort scan prints each row as
it is read, and -o jsonl streams one lock per line. Ctrl-C stops a scan
cleanly with what was read.

Over a redis+redlock:// URL (3 to 9 independent nodes) every node is read at
once: per key one row with the quorum (owner on a majority, nodes holding it,
validity) and its nodes beneath, and the findings NO_QUORUM SPLIT_OWNERS
MINORITY_HOLDER TTL_SKEW NODE_UNREACHABLE (docs/redlock.md).

Read-only: only TYPE, PTTL, PEXPIRETIME, OBJECT IDLETIME, STRLEN, GETRANGE,
HLEN/HSCAN, LLEN/LRANGE, SCARD/SSCAN, ZCARD/ZRANGE, SCAN and DBSIZE are sent.`

// NewCmdInspect returns `lockctl inspect`; runF replaces the run function in tests.
func NewCmdInspect(f *Factory, runF func(*InspectOptions) error) *cobra.Command {
	var keys []string
	var search, quiet bool
	var limit int
	var sortOrder string
	var pattern, failOn, owner, lease string
	var count, permits int64
	cmd := &cobra.Command{
		Use:         "inspect [VALUE...] [--key KEY]... [--pattern GLOB]",
		Annotations: outputFormats(inspectFormats),
		Short:       "Show who holds a lock, which library wrote it, what is wrong",
		Long:        inspectLong,
		Example: `  lockctl inspect order-demo-001
  lockctl inspect --key lock:OrderId:order-demo-001 -o json
  lockctl inspect --key 'job-lock:default:report' --key concurrent-test2
  lockctl inspect --key semaphore:exports --permits 3
  lockctl inspect --pattern 'lock:*' --fail-on error
  lockctl inspect --pattern '*' -o jsonl > locks.jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			endOnSecondSignal(cmd.Context())
			format, err := f.Output(inspectFormats...)
			if err != nil {
				return err
			}
			if err := emptyFlags(cmd, "pattern"); err != nil {
				return err
			}
			opts := &InspectOptions{IO: f.IO, Printer: f.newPrinter(format), Format: format, Redis: f.Redis, Ctx: cmd.Context(),
				Values: args, Keys: keys, Search: search, Limit: limit, Pattern: pattern, Count: count, Sort: sortOrder, Quiet: quiet}
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
			if err := parseInspectFailOn(opts, failOn); err != nil {
				return err
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
			if opts.Declared, err = f.declaredLayouts(); err != nil {
				return err
			}
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
	fl.StringVar(&sortOrder, "sort", sortTTL, "--pattern's table order: ttl (printed once the scan ends) or scan (rows as they are read)")
	fl.StringVar(&failOn, "fail-on", "", "exit 1 when a finding of this severity or worse exists: error or warning ("+failOnAliases+"); absent: when a key does not exist; both comma-separated")
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"error", "warning", "absent", "error,absent"}, cobra.ShellCompDirectiveNoFileComp))
	fl.StringVar(&owner, "owner", "", "expected owner: the owner token (of a value <fence>:<owner>, the part after the colon; LOCKCTL_OWNER of run) or the whole stored value, compared byte for byte (hex:... for raw bytes); exit 1 unless that owner holds the lock (another owner, or no key)")
	addRedlockLeaseFlag(cmd, &lease)
	addPermitsFlag(cmd, &permits)
	addKeyFlags(cmd)
	addPolicyFlags(cmd)
	addQuietFlag(cmd, &quiet)
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
	if err := choice("sort", opts.Sort, sortTTL, sortScan); err != nil {
		return err
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
		Declared:    opts.Declared,
	}}
}

// declaredLayouts reads the layouts file of inspect.layouts (none when
// unset; a relative path set in a config file is relative to that file's
// directory, as a flag's or a variable's to the working directory); a
// file that cannot be read or has a mistake is a usage error (exit 2)
// naming the file, the line and what is accepted.
func (f *Factory) declaredLayouts() ([]inspect.Declared, error) {
	path := f.Config.GetString(keyLayouts)
	if path == "" {
		return nil, nil
	}
	if f.settingSource(f.cmd, keyLayouts) == "file" && !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(f.ConfigPath), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("%s: cannot read the layouts file: %s", f.settingName(keyLayouts, ""), oneLine(err))
	}
	ds, err := inspect.ParseLayouts(path, data)
	if err != nil {
		return nil, usageErrorf("%s", err)
	}
	return inspect.Compile(ds), nil
}

func inspectRun(opts *InspectOptions) error {
	if opts.Redlock != nil {
		return redlockInspectRun(opts)
	}
	ctx := opts.Ctx
	start := time.Now()
	conn, err := opts.Redis(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if opts.Pattern != "" {
		return inspectScan(opts, conn)
	}
	// Named keys: the whole wait, connection included, is one --timeout
	// (issue 33: PING, INFO and two reads each waited one). A scan's pages
	// each get one: a keyspace takes as long as it takes.
	rctx, cancel := context.WithDeadline(ctx, start.Add(conn.Timeout))
	defer cancel()
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
	locks, err := reader.Read(rctx, conn.Client, keys)
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

// readError is err from a read on conn as callError words it (ctx is the
// command's: Ctrl-C is not the server's fault; a timeout is "no answer within").
func readError(ctx context.Context, conn *RedisConn, err error) error {
	return conn.callError(ctx, err)
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
	gcPercent := 400
	if opts.Format == formatJSON || opts.Format == formatYAML {
		gcPercent = 100 // they keep up to spillBytes of locks: 5 times that would be most of the heap
	}
	defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(96 << 20))
	so := inspect.ScanOptions{Pattern: opts.Pattern, Count: opts.Count}
	var sp *scanProgress // nil-safe: no bar when piped or --quiet
	streamed := opts.Sort == sortScan && (opts.Format == formatTable || opts.Format == formatWide)
	// Rows streamed onto the same terminal are the progress: a bar would mix with them.
	if opts.IO.ErrTTY && !opts.Quiet && !(streamed && opts.IO.OutTTY) {
		if total, err := conn.Client.DBSize(ctx).Result(); err == nil {
			sp = startScanProgress(opts.IO.ErrOut, opts.Pattern, total, &so)
			defer sp.stop()
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
	var stream *ObjectStream // --sort scan: the table's rows as read
	if streamed {
		tv := &TableView{p: opts.Printer}
		stream = tv.ObjectStream(inspectColumns)
		emit = func(l inspect.Lock) error {
			_, rows := inspectRows([]inspect.Lock{l})
			stream.Add(rows[0])
			locks = append(locks, l)
			return tv.err
		}
	}
	sorted, notOwned := newLockSorter(), false
	defer sorted.close()
	if opts.Format == formatJSON || opts.Format == formatYAML {
		// Sorted on disk past a few MB, then streamed: memory stays flat.
		emit = func(l inspect.Lock) error {
			sum.Add(&l)
			notOwned = notOwned || l.OwnerCheck == "NOT_OWNED"
			return sorted.add(&l)
		}
	}
	if opts.Format == formatJSONL {
		// Streamed: one line per lock as read, memory stays flat.
		emit = func(l inspect.Lock) error {
			sum.Add(&l)
			return enc.Encode(l)
		}
	}
	err := reader.Scan(ctx, conn.Client, so, sp.counting(emit))
	sp.scanned(stream == nil && opts.Format != formatJSONL, len(locks))
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
			perr = opts.failed(sum)
		}
	} else if stream != nil {
		rep := inspect.NewReport(locks)
		rep.Summary.Interrupted = interrupted
		tv := &TableView{p: opts.Printer}
		inspectDetails(tv, rep, stream.Close(), true)
		if perr = tv.err; perr == nil {
			perr = reportExit(opts, rep)
		}
	} else if opts.Format == formatJSON || opts.Format == formatYAML {
		sum.Interrupted = interrupted
		sp.stop()
		perr = streamScan(ctx, opts, sorted, sum, notOwned)
	} else {
		inspect.SortByTTL(locks)
		sp.stop()
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

// parseInspectFailOn sets opts.FailOn and opts.FailOnAbsent from
// --fail-on: a severity, "absent", or both comma-separated.
func parseInspectFailOn(opts *InspectOptions, value string) error {
	if value == "" {
		return nil
	}
	for _, part := range strings.Split(value, ",") {
		if part == "absent" {
			opts.FailOnAbsent = true
			continue
		}
		atWarn, err := failOnLevel(part, "error", "warning")
		if err != nil {
			return usageErrorf("fail-on %q is not one of error, warning, absent, or a severity and absent comma-separated (%s)", value, failOnAliases)
		}
		opts.FailOn = string(inspect.SeverityError)
		if atWarn {
			opts.FailOn = string(inspect.SeverityWarning)
		}
	}
	return nil
}

// failed is --fail-on over a summary: checkFailed when a lock's worst
// finding reaches opts.FailOn, or with FailOnAbsent a key is absent.
func (opts *InspectOptions) failed(sum inspect.Summary) error {
	if opts.FailOnAbsent && sum.ByFinding[inspect.FindingAbsent] > 0 {
		return checkFailed()
	}
	return failOn(opts.FailOn, sum.BySeverity)
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
	return reportExit(opts, rep)
}

// reportExit is the exit of a printed report: NOT_OWNED, then --fail-on;
// none for an interrupted (partial) one.
func reportExit(opts *InspectOptions, rep inspect.Report) error {
	if rep.Summary.Interrupted {
		return nil
	}
	for _, l := range rep.Locks {
		if l.OwnerCheck == "NOT_OWNED" {
			return checkFailed() // as unlock --owner: a script can trust exit 0
		}
	}
	return opts.failed(rep.Summary)
}

// The orders of --sort.
const (
	sortTTL  = "ttl"
	sortScan = "scan"
)
