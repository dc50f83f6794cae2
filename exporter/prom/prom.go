// Package prom is the Prometheus side of `lockctl exporter`: a
// fleet.Follower over a pattern whose passes become metrics
// (docs/monitoring.md), served read-only on /metrics and /healthz. It is
// the only package that imports the Prometheus client, whose package inits
// (its default registry, procfs, protobuf descriptors) cost about 1.5 ms of
// every start: only the lockctl-exporter binary links it, registering it
// with exporter.Register. Nothing here prints, reads flags or writes to Redis.
package prom

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/exporter"
	"github.com/lockctl/lockctl/fleet"
	"github.com/lockctl/lockctl/inspect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

// Exporter holds the metrics of one pattern.
type Exporter struct {
	opts     exporter.Options
	reg      *prometheus.Registry
	up       prometheus.Gauge
	locks    *prometheus.GaugeVec
	findings *prometheus.GaugeVec
	events   *prometheus.CounterVec
	duration *prometheus.GaugeVec
	scanned  *prometheus.CounterVec
	errs     *prometheus.CounterVec
	success  *prometheus.GaugeVec
	tracked  *prometheus.GaugeVec
	hists    *snapshot
	keys     *keySeries

	mu      sync.Mutex
	healthy bool
	lastErr string
	// next accumulates the pass in progress; PassDone publishes it.
	next passCounts
}

func init() {
	exporter.Register(func(opts exporter.Options) exporter.Service { return New(opts) })
}

// New returns an Exporter with its registry: the lockctl_* metrics, and
// the Go runtime's and the process's (go_*, process_*).
func New(opts exporter.Options) *Exporter {
	e := &Exporter{opts: opts, reg: prometheus.NewRegistry()}
	p := []string{"pattern"}
	e.up = prometheus.NewGauge(prometheus.GaugeOpts{Name: "lockctl_up", Help: "1 when the last pass over the keyspace succeeded, 0 when it failed or none ended yet."})
	e.locks = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lockctl_locks", Help: "Lock keys seen by the last complete pass, by the library that wrote them."}, []string{"pattern", "layout"})
	e.findings = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lockctl_findings", Help: "Lock keys with each finding in the last complete pass (docs/findings.md)."}, []string{"pattern", "code", "severity"})
	e.events = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lockctl_events_total", Help: "Ownership events seen between passes (acquired, renewed, released, expired, takeover, ...)."}, []string{"pattern", "event"})
	e.duration = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lockctl_scan_duration_seconds", Help: "Duration of the last complete pass, paced by --scan-rate."}, p)
	e.scanned = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lockctl_scan_keys_total", Help: "Keyspace entries walked by SCAN (COUNT per call, an estimate)."}, p)
	e.errs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lockctl_scan_errors_total", Help: "Failed passes, by kind: timeout, connection, auth, scan_bound, other."}, []string{"pattern", "kind"})
	e.success = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lockctl_scan_last_success_timestamp_seconds", Help: "Unix time the last complete pass ended."}, p)
	e.tracked = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lockctl_scan_locks", Help: "Lock keys followed between passes."}, p)
	e.hists = newSnapshot(opts.Pattern, opts.RenewBound)
	e.keys = newKeySeries()
	e.reg.MustRegister(e.up, e.locks, e.findings, e.events, e.duration, e.scanned, e.errs, e.success, e.tracked, e.hists, e.keys,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, kind := range errorKinds { // a counter exists at 0 before its first error, so rate() sees the first one
		e.errs.WithLabelValues(opts.Pattern, kind)
	}
	for _, ev := range countedEvents {
		e.events.WithLabelValues(opts.Pattern, ev)
	}
	e.next = newPassCounts(e.hists)
	return e
}

// countedEvents are created at 0 at start, so that increase() and rate()
// over them see the first event.
var countedEvents = []string{"acquired", "renewed", "released", "expired", "takeover", "renewed_past_bound"}

// Handler serves /metrics (the registry) and /healthz (200 "ok" while the
// process runs, whatever Redis says: the scan's health is lockctl_up).
func (e *Exporter) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{Registry: e.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		e.mu.Lock()
		healthy, last := e.healthy, e.lastErr
		e.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !healthy && last != "" {
			fmt.Fprintf(w, "ok; last pass failed: %s\n", last)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "lockctl exporter: /metrics, /healthz")
	})
	return mux
}

// Run follows the pattern (and samples Keys) until ctx ends, then returns
// nil. onErr is told of each failed pass (already counted), scrubbed by
// the caller before it is shown.
func (e *Exporter) Run(ctx context.Context, onErr func(error)) error {
	f := fleet.New(e.opts.Reader, e.opts.Client, fleet.Options{Pattern: e.opts.Pattern, Count: e.opts.Count, Interval: e.opts.Interval,
		Rate: e.opts.Rate, Watch: inspect.WatchOptions{RenewBound: e.opts.RenewBound}})
	var wg sync.WaitGroup
	if len(e.opts.Keys) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.keys.run(ctx, e.opts)
		}()
	}
	err := f.Run(ctx, ctx, &sink{e: e, f: f}, func(err error) error {
		e.failed(err)
		if onErr != nil {
			onErr(err)
		}
		return nil
	})
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// failed counts a failed pass by its kind and drops lockctl_up to 0.
func (e *Exporter) failed(err error) {
	e.errs.WithLabelValues(e.opts.Pattern, errorKind(err)).Inc()
	e.up.Set(0)
	e.mu.Lock()
	e.healthy, e.lastErr = false, errorKind(err)
	e.next = newPassCounts(e.hists) // the partial pass is not published
	e.mu.Unlock()
}

var errorKinds = []string{"timeout", "connection", "auth", "scan_bound", "other"}

// errorKind names a failed pass's error for lockctl_scan_errors_total.
func errorKind(err error) string {
	var ne net.Error
	var be *inspect.ScanBoundError
	var oe *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case redis.IsAuthError(err) || redis.IsPermissionError(err):
		return "auth"
	case errors.As(err, &be):
		return "scan_bound"
	case errors.As(err, &oe) || errors.Is(err, redis.ErrClosed) || strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "connection"):
		return "connection"
	}
	return "other"
}

// passCounts is what a pass accumulates before PassDone publishes it.
type passCounts struct {
	layouts  map[string]int
	findings map[[2]string]int
	ttl      *histCounts
	held     *histCounts
}

func newPassCounts(s *snapshot) passCounts {
	return passCounts{layouts: map[string]int{}, findings: map[[2]string]int{}, ttl: newHistCounts(s.ttlBounds), held: newHistCounts(s.heldBounds)}
}

// sink turns a Follower's calls into metric updates.
type sink struct {
	e *Exporter
	f *fleet.Follower
}

func (s *sink) Lock(l *inspect.Lock, held time.Duration) {
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	layout := l.Layout.Name
	if layout == "" {
		layout = "unknown"
	}
	e.next.layouts[layout]++
	seen := map[string]bool{}
	for _, f := range l.Findings {
		if !seen[f.Code] {
			seen[f.Code] = true
			e.next.findings[[2]string{f.Code, string(f.Severity)}]++
		}
	}
	if l.PTTLMS >= 0 {
		e.next.ttl.observe(float64(l.PTTLMS) / 1000)
	}
	e.next.held.observe(held.Seconds())
}

func (s *sink) Event(ev inspect.Event) error {
	switch ev.Event {
	case inspect.EventHeld, inspect.EventFree, inspect.EventFinding, inspect.EventFindingCleared:
		return nil // a state, or a finding: lockctl_findings holds those
	}
	s.e.events.WithLabelValues(s.e.opts.Pattern, strings.ToLower(ev.Event)).Inc()
	return nil
}

func (s *sink) PassDone(p fleet.Pass) {
	e := s.e
	pat := e.opts.Pattern
	e.mu.Lock()
	next := e.next
	e.next = newPassCounts(e.hists)
	e.healthy, e.lastErr = true, ""
	e.mu.Unlock()
	e.locks.DeletePartialMatch(prometheus.Labels{"pattern": pat})
	for layout, n := range next.layouts {
		e.locks.WithLabelValues(pat, layout).Set(float64(n))
	}
	e.findings.DeletePartialMatch(prometheus.Labels{"pattern": pat})
	for k, n := range next.findings {
		e.findings.WithLabelValues(pat, k[0], k[1]).Set(float64(n))
	}
	e.hists.publish(next.ttl, next.held)
	e.duration.WithLabelValues(pat).Set(p.Ended.Sub(p.Started).Seconds())
	e.scanned.WithLabelValues(pat).Add(float64(p.Walked))
	e.success.WithLabelValues(pat).Set(float64(p.Ended.UnixMilli()) / 1000)
	e.tracked.WithLabelValues(pat).Set(float64(s.f.Tracked()))
	e.up.Set(1)
}
