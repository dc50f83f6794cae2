// Package exporter is what `lockctl exporter` needs without the Prometheus
// client: its Options, its alerting rules, and the Service that
// exporter/prom registers. The client's package inits cost about 1.5 ms of
// every start (issue 29: measured with GODEBUG=inittrace=1), so the lockctl
// binary links only this package and hands `lockctl exporter` to the
// lockctl-exporter binary, which links exporter/prom too.
package exporter

import (
	"context"
	"net/http"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/redis/go-redis/v9"
)

// Options are an exporter's inputs.
type Options struct {
	// Pattern is the SCAN MATCH glob followed ("lock:*").
	Pattern string
	// Keys get series of their own (lockctl_key_*): only keys the user names,
	// so the series count does not grow with the locks.
	Keys []string
	// Interval is the least time between pass starts; Rate the keyspace
	// entries walked per second (0: DBSIZE / Interval); Count the SCAN COUNT.
	Interval time.Duration
	Rate     int64
	Count    int64
	// RenewBound is the renewal bound (policy.renew_bound): RENEWED_PAST_BOUND,
	// and a bucket boundary of lockctl_lock_held_seconds.
	RenewBound time.Duration
	// Reader reads the keys (Light for the scan); Client is the connection.
	Reader *inspect.Reader
	Client redis.UniversalClient
}

// Service is a running exporter: its HTTP handler (/metrics, /healthz) and
// its passes, which Run makes until ctx ends (then it returns nil), telling
// onErr of each failed one.
type Service interface {
	Handler() http.Handler
	Run(ctx context.Context, onErr func(error)) error
}

var newService func(Options) Service

// Register makes New build Services with newFn; exporter/prom calls it
// from its init, as a database/sql driver registers itself.
func Register(newFn func(Options) Service) { newService = newFn }

// Linked reports whether this binary holds a Service (exporter/prom is
// linked): false in lockctl, true in lockctl-exporter and the tests.
func Linked() bool { return newService != nil }

// New returns the registered Service for opts; it panics when none is
// Linked, which is a build mistake, not an input error.
func New(opts Options) Service {
	if newService == nil {
		panic("exporter: no Service registered (import exporter/prom)")
	}
	return newService(opts)
}
