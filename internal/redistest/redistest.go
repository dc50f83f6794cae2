// Package redistest starts real redis-server processes on free loopback ports
// for tests. Nothing is mocked: tests talk to the server over TCP.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockctl/lockctl/internal/redisproc"
)

// Server is one running redis-server (Addr, Port, Dir, Stop: see redisproc).
type Server struct {
	*redisproc.Server
}

// URL returns redis://127.0.0.1:<port>/0.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Client returns a go-redis client for db 0, closed when tb ends.
func (s *Server) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Launch starts a redis-server with no persistence on a free loopback port,
// plus extra arguments ("--requirepass", "x", ...), and waits until it
// accepts connections. The caller must Stop it.
func Launch(extra ...string) (*Server, error) {
	return launch(func(port int, dir string) []string {
		return append(redisproc.BaseArgs(port, dir), extra...)
	})
}

// launch starts redis-server with the arguments args builds for a free port
// and a fresh directory; a missing binary gets an error saying how to
// install it.
func launch(args func(port int, dir string) []string) (*Server, error) {
	s, err := redisproc.Launch(context.Background(), redisproc.Options{Args: args})
	if errors.Is(err, redisproc.ErrNotFound) {
		return nil, fmt.Errorf("%w: the tests need a real Redis; install Debian's package (apt-get install redis-server)", err)
	}
	if err != nil {
		return nil, err
	}
	return &Server{s}, nil
}

// Restart stops the server with SHUTDOWN NOSAVE and starts it again on the
// same port and arguments, empty: a cache-mode Redis (no persistence) that
// restarted. Clients reconnect on their next command. It fails tb when the
// server does not come back.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	if err := s.Server.Restart(context.Background(), 10*time.Second); err != nil {
		tb.Fatalf("restart on %s: %v", s.Addr, err)
	}
}

// lastLines is the end of a command's output (at most 500 bytes), for an error.
func lastLines(s string) string {
	if len(s) > 500 {
		s = s[len(s)-500:]
	}
	return s
}

// Start launches a dedicated server for one test and stops it when tb ends.
// It fails the test with a clear message when redis-server is missing.
func Start(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	s, err := Launch(extra...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

var (
	sharedMu  sync.Mutex
	sharedSrv *Server
)

// Main runs a test package with one shared server, started on first use by
// Shared and stopped after the tests. Call it from TestMain: os.Exit(redistest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	sharedMu.Lock()
	if sharedSrv != nil {
		sharedSrv.Stop()
	}
	sharedMu.Unlock()
	return code
}

// Shared returns the package's shared server, starting it on first use. Tests
// that share it use their own keys (see Key) and never FLUSHALL.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedSrv == nil {
		s, err := Launch()
		if err != nil {
			tb.Fatal(err)
		}
		sharedSrv = s
	}
	return sharedSrv
}

// Key returns a key unique to the test: "t:<Name>:<suffix>".
func Key(tb testing.TB, suffix string) string {
	return "t:" + Name(tb) + ":" + suffix
}

var (
	namesMu sync.Mutex
	names   = map[testing.TB]string{}
	runs    = map[string]int{} // how many times each test name began
)

// Name is tb.Name(), made unique in this process for the keys a test
// writes on the shared server: a test run again (go test -count=2) gets
// "<name>#2", "#3"..., so that it does not find the last run's keys.
func Name(tb testing.TB) string {
	namesMu.Lock()
	defer namesMu.Unlock()
	if n, ok := names[tb]; ok {
		return n
	}
	n := tb.Name()
	if runs[n]++; runs[n] > 1 {
		n = fmt.Sprintf("%s#%d", n, runs[n])
	}
	names[tb] = n
	tb.Cleanup(func() {
		namesMu.Lock()
		delete(names, tb)
		namesMu.Unlock()
	})
	return n
}
