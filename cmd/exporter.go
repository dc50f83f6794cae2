package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/exporter"
	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/spf13/cobra"
)

// The exporter's settings (docs/monitoring.md); flag > LOCKCTL_EXPORTER_* > file > default.
const (
	keyExporterListen   = "exporter.listen"
	keyExporterPattern  = "exporter.pattern"
	keyExporterInterval = "exporter.interval"
	keyExporterScanRate = "exporter.scan_rate"
)

// ExporterOptions are the inputs of `lockctl exporter`.
type ExporterOptions struct {
	IO    *IOStreams
	Redis func(ctx context.Context) (*RedisConn, error)
	Ctx   context.Context
	// Listen is the HTTP address (host:port; port 0 picks a free one).
	Listen     string
	Pattern    string
	Keys       []string
	Interval   time.Duration
	ScanRate   int64
	RenewBound time.Duration
	LeaseCap   time.Duration
	FenceFor   func(lockKey string) string
	// Declared are the layouts of the inspect.layouts file, compiled.
	Declared   []inspect.Declared
	PrintRules bool
}

// NewCmdExporter returns `lockctl exporter`; runF replaces the run function in tests.
func NewCmdExporter(f *Factory, runF func(*ExporterOptions) error) *cobra.Command {
	var keys []string
	var printRules bool
	cmd := &cobra.Command{
		Use:   "exporter [--listen ADDR] [--pattern GLOB] [--key KEY]...",
		Args:  cobra.NoArgs,
		Short: "Serve Prometheus metrics of locks matching a pattern (read-only)",
		Long: `Follow every lock matching --pattern as watch --pattern does (SCAN passes
paced to --scan-rate, the same reads and findings) and serve the result as
Prometheus metrics on http://LISTEN/metrics, with /healthz for a liveness
probe (docs/monitoring.md):

  lockctl_locks{pattern,layout}              locks by library, last pass
  lockctl_findings{pattern,code,severity}    locks with each finding
  lockctl_lock_ttl_seconds                   histogram of remaining TTLs
  lockctl_lock_held_seconds                  histogram of how long owners held
  lockctl_events_total{pattern,event}        acquired, renewed, released, ...
  lockctl_scan_duration_seconds, lockctl_scan_keys_total,
  lockctl_scan_errors_total{kind}, lockctl_up

Per-key series (lockctl_key_*) only for the keys named with --key, so the
series count stays flat as locks grow. --print-rules prints Prometheus
alerting rules for these metrics and exits.

Read-only: the same commands as inspect --pattern. Redis must answer at
start; later failures count in lockctl_scan_errors_total and set lockctl_up
to 0 while the exporter keeps serving. SIGTERM or Ctrl-C stops it cleanly
(exit 0). It runs lockctl-exporter, beside lockctl or on PATH (exit 127
without it), which links the Prometheus client: other commands start
without its package inits.`,
		Example: `  lockctl exporter --redis redis://127.0.0.1:6379/0 --pattern 'lock:*'
  lockctl exporter --listen 0.0.0.0:9477 --interval 1m --scan-rate 20000
  lockctl exporter --print-rules > lockctl-rules.yml`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := &ExporterOptions{IO: f.IO, Redis: f.Redis, Ctx: cmd.Context(), Keys: keys, PrintRules: printRules}
			if err := f.exporterSettings(opts); err != nil {
				return err
			}
			if err := checkValuesKeys(nil, keys); err != nil {
				return err
			}
			pol, err := f.policySetting()
			if err != nil {
				return err
			}
			opts.RenewBound, opts.LeaseCap = pol.RenewBound, pol.LeaseCap
			if _, opts.FenceFor, err = f.lockKeySettings(); err != nil {
				return err
			}
			if opts.Declared, err = f.declaredLayouts(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			if !opts.PrintRules && !exporter.Linked() {
				return handOver(f, exporterBinary, "exporter")
			}
			return exporterRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.String("listen", "", "HTTP address to serve /metrics and /healthz on (default 127.0.0.1:9477)")
	flagConfigKey(fl, "listen", keyExporterListen)
	fl.String("pattern", "", "SCAN glob of the lock keys to follow (default lock:*)")
	flagConfigKey(fl, "pattern", keyExporterPattern)
	fl.String("interval", "", "least time between the starts of two passes (default 30s)")
	flagConfigKey(fl, "interval", keyExporterInterval)
	fl.String("scan-rate", "", "keyspace entries SCAN walks per second (default 0: DBSIZE / --interval)")
	flagConfigKey(fl, "scan-rate", keyExporterScanRate)
	fl.StringArrayVar(&keys, "key", nil, "exact Redis key to give series of its own (repeatable)")
	fl.BoolVar(&printRules, "print-rules", false, "print Prometheus alerting rules for the metrics and exit")
	addKeyFlags(cmd)
	addPolicyFlags(cmd)
	return cmd
}

// exporterSettings reads listen, pattern, interval and scan rate from the
// configuration, each checked with the value named.
func (f *Factory) exporterSettings(opts *ExporterOptions) error {
	c := f.Config
	opts.Listen, opts.Pattern = c.GetString(keyExporterListen), c.GetString(keyExporterPattern)
	if _, _, err := net.SplitHostPort(opts.Listen); err != nil {
		return usageErrorf("listen address %q is not host:port (e.g. 127.0.0.1:9477)", opts.Listen)
	}
	if err := checkGlob("pattern", opts.Pattern); err != nil {
		return err
	}
	iv := c.GetString(keyExporterInterval)
	d, err := lockcore.ParsePositiveDuration(iv)
	if err != nil {
		return usageErrorf("interval %s", err)
	}
	opts.Interval = d
	rate := c.GetString(keyExporterScanRate)
	n, err := strconv.ParseInt(rate, 10, 64)
	if err != nil || n < 0 {
		return usageErrorf("scan rate %q is not a whole number from 0 (keyspace entries per second; 0: DBSIZE / interval)", rate)
	}
	opts.ScanRate = n
	return nil
}

// exporterRun serves the metrics until the context ends (SIGTERM, Ctrl-C),
// then shuts the server down and returns nil.
func exporterRun(opts *ExporterOptions) error {
	if opts.PrintRules {
		_, err := io.WriteString(opts.IO.Out, exporter.Rules(opts.RenewBound))
		return err
	}
	ctx := opts.Ctx
	conn, err := opts.Redis(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	reader := newReader(&InspectOptions{FenceFor: opts.FenceFor, LeaseCap: opts.LeaseCap, Declared: opts.Declared}, conn, nil)
	reader.Light = true
	reader.MaxValueBytes = inspect.ScanMaxValueBytes
	exp := exporter.New(exporter.Options{Pattern: opts.Pattern, Keys: opts.Keys, Interval: opts.Interval, Rate: opts.ScanRate,
		RenewBound: opts.RenewBound, Reader: reader, Client: conn.Client})
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return usageErrorf("cannot listen on %s: %v", opts.Listen, unwrapOp(err))
	}
	srv := &http.Server{Handler: exp.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(opts.IO.ErrOut, "lockctl: exporter: serving http://%s/metrics, following %s on %s every %s\n",
		ln.Addr(), opts.Pattern, conn.URL, lockcore.FormatDuration(opts.Interval))
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() {
		ran <- exp.Run(runCtx, func(err error) {
			fmt.Fprintf(opts.IO.ErrOut, "lockctl: exporter: pass failed: %s\n", conn.errLine(err))
		})
	}()
	var runErr error
	ranDone := false
	select {
	case <-ctx.Done():
	case err := <-served:
		stop()
		<-ran
		return fmt.Errorf("exporter: HTTP server: %w", err)
	case runErr = <-ran:
		ranDone = true
	}
	stop()
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("exporter: shutting down: %w", err)
	}
	if !ranDone {
		runErr = <-ran
	}
	if runErr != nil {
		return redisError(conn.URL, runErr)
	}
	fmt.Fprintln(opts.IO.ErrOut, "lockctl: exporter: stopped")
	return nil
}

// unwrapOp drops net.OpError's "listen tcp ADDR:" prefix, which the
// message already names.
func unwrapOp(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}
