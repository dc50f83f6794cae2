package prom

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/lockctl/lockctl/exporter"
	"github.com/lockctl/lockctl/inspect"
	"github.com/prometheus/client_golang/prometheus"
)

// ttlBounds are lockctl_lock_ttl_seconds' upper bounds (s): sub-second
// leases to the day-long ones a unit mix-up leaves.
var ttlBounds = []float64{0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400}

// heldBounds are lockctl_lock_held_seconds' (s); the renewal bound is added.
var heldBounds = []float64{10, 60, 300, 900, 1800, 3600, 7200, 21600, 43200, 86400}

// histCounts counts observations of one pass into buckets (not cumulative).
type histCounts struct {
	bounds []float64
	counts []uint64 // len(bounds)+1: the last is above every bound
	sum    float64
}

func newHistCounts(bounds []float64) *histCounts {
	return &histCounts{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histCounts) observe(v float64) {
	h.counts[sort.SearchFloat64s(h.bounds, v)]++
	h.sum += v
}

// cumulative is the Prometheus form: bucket upper bound → count at or under it.
func (h *histCounts) cumulative() (map[float64]uint64, uint64) {
	out := make(map[float64]uint64, len(h.bounds))
	var n uint64
	for i, b := range h.bounds {
		n += h.counts[i]
		out[b] = n
	}
	return out, n + h.counts[len(h.bounds)]
}

// snapshot is lockctl_lock_ttl_seconds and lockctl_lock_held_seconds: the
// distribution over the locks of the last complete pass, not a running
// total, so `_bucket{le="+Inf"} - _bucket{le="43200"}` is the number of
// locks held past 12h now (a series per key would grow with the locks).
type snapshot struct {
	pattern               string
	ttlBounds, heldBounds []float64
	ttlDesc, heldDesc     *prometheus.Desc
	mu                    sync.Mutex
	ttl, held             *histCounts
}

func newSnapshot(pattern string, renewBound time.Duration) *snapshot {
	hb := slices.Clone(heldBounds)
	if b := renewBound.Seconds(); b > 0 && !slices.Contains(hb, b) {
		hb = append(hb, b)
		slices.Sort(hb)
	}
	s := &snapshot{pattern: pattern, ttlBounds: ttlBounds, heldBounds: hb,
		ttlDesc:  prometheus.NewDesc("lockctl_lock_ttl_seconds", "Remaining TTL of the lock keys of the last complete pass (keys with no TTL left out: lockctl_findings{code=\"NO_TTL\"}).", []string{"pattern"}, nil),
		heldDesc: prometheus.NewDesc("lockctl_lock_held_seconds", "How long each lock key's current owner has been seen holding it, over the last complete pass.", []string{"pattern"}, nil)}
	s.publish(newHistCounts(s.ttlBounds), newHistCounts(s.heldBounds))
	return s
}

func (s *snapshot) publish(ttl, held *histCounts) {
	s.mu.Lock()
	s.ttl, s.held = ttl, held
	s.mu.Unlock()
}

func (s *snapshot) Describe(ch chan<- *prometheus.Desc) { ch <- s.ttlDesc; ch <- s.heldDesc }

func (s *snapshot) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	ttl, held := s.ttl, s.held
	s.mu.Unlock()
	for _, h := range []struct {
		d *prometheus.Desc
		c *histCounts
	}{{s.ttlDesc, ttl}, {s.heldDesc, held}} {
		buckets, n := h.c.cumulative()
		ch <- prometheus.MustNewConstHistogram(h.d, n, h.c.sum, buckets, s.pattern)
	}
}

// keySeries are the per-key series of the keys named with --key, read every
// interval with inspect's full reads and a Differ each.
type keySeries struct {
	existsDesc, ttlDesc, heldDesc *prometheus.Desc
	mu                            sync.Mutex
	last                          map[string]keyValue
}

type keyValue struct {
	exists    bool
	ttl, held float64
}

func newKeySeries() *keySeries {
	k := []string{"key"}
	return &keySeries{last: map[string]keyValue{},
		existsDesc: prometheus.NewDesc("lockctl_key_exists", "1 when the key named with --key exists.", k, nil),
		ttlDesc:    prometheus.NewDesc("lockctl_key_ttl_seconds", "Remaining TTL of a key named with --key (-1: no TTL).", k, nil),
		heldDesc:   prometheus.NewDesc("lockctl_key_held_seconds", "How long a key named with --key has had its current owner, as seen.", k, nil)}
}

func (k *keySeries) Describe(ch chan<- *prometheus.Desc) {
	ch <- k.existsDesc
	ch <- k.ttlDesc
	ch <- k.heldDesc
}

func (k *keySeries) Collect(ch chan<- prometheus.Metric) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, v := range k.last {
		exists := 0.0
		if v.exists {
			exists = 1
		}
		ch <- prometheus.MustNewConstMetric(k.existsDesc, prometheus.GaugeValue, exists, key)
		if v.exists {
			ch <- prometheus.MustNewConstMetric(k.ttlDesc, prometheus.GaugeValue, v.ttl, key)
			ch <- prometheus.MustNewConstMetric(k.heldDesc, prometheus.GaugeValue, v.held, key)
		}
	}
}

// run reads opts.Keys every interval until ctx ends; a failed read keeps
// the last values (the pattern's pass counts the error).
func (k *keySeries) run(ctx context.Context, opts exporter.Options) {
	r := &inspect.Reader{Options: opts.Reader.Options}
	differs := map[string]*inspect.Differ{}
	for _, key := range opts.Keys {
		differs[key] = inspect.NewDiffer(inspect.WatchOptions{RenewBound: opts.RenewBound})
	}
	tick := time.NewTicker(max(opts.Interval, time.Second))
	defer tick.Stop()
	for {
		at := time.Now()
		if locks, err := r.Read(ctx, opts.Client, opts.Keys); err == nil {
			k.mu.Lock()
			for _, l := range locks {
				d := differs[l.Key]
				d.Next(inspect.SampleOf(l, at))
				v := keyValue{exists: l.Exists, ttl: float64(l.PTTLMS) / 1000}
				if l.PTTLMS < 0 {
					v.ttl = -1
				}
				if since := d.OwnerSince(); l.Exists && !since.IsZero() {
					v.held = at.Sub(since).Seconds()
				}
				k.last[l.Key] = v
			}
			k.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
