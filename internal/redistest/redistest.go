// Package redistest starts real redis-server processes on free loopback ports
// for tests. Nothing is mocked: tests talk to the server over TCP.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one running redis-server.
type Server struct {
	// Addr is host:port on 127.0.0.1.
	Addr string
	// Port is the TCP port.
	Port int
	// Dir is the server's working directory (removed on Stop).
	Dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	// args are the server's arguments, for Restart.
	args []string
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

// Binary returns the path of redis-server or an error saying how to install it.
func Binary() (string, error) {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redis-server not found on PATH: the tests need a real Redis; install Debian's package (apt-get install redis-server)")
	}
	return p, nil
}

// Launch starts a redis-server with no persistence on a free loopback port,
// plus extra arguments ("--requirepass", "x", ...), and waits until it
// answers PING. The caller must Stop it.
func Launch(extra ...string) (*Server, error) {
	return launch(func(port int, dir string) []string {
		return append(baseArgs(port, dir), extra...)
	})
}

// baseArgs are the arguments of every test server: loopback only, no
// persistence, a log file in dir.
func baseArgs(port int, dir string) []string {
	return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}
}

// launch starts redis-server with the arguments args builds for a free port
// and a fresh directory, retrying on another port when the start fails (the
// port may have been taken between the probe and the bind). The server
// accepts TCP connections on 127.0.0.1:port when it returns.
func launch(args func(port int, dir string) []string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "lockctl-redis-")
		if err != nil {
			return nil, err
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Dir: dir, args: args(port, dir)}
		if err := s.start(bin); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if lastErr = s.waitReady(); lastErr == nil {
			return s, nil
		}
		s.Stop()
	}
	return nil, fmt.Errorf("redis-server did not start: %w", lastErr)
}

func (s *Server) start(bin string) error {
	s.cmd = exec.Command(bin, s.args...)
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	return nil
}

// Restart stops the server with SHUTDOWN NOSAVE and starts it again on the
// same port and arguments, empty: a cache-mode Redis (no persistence) that
// restarted. Clients reconnect on their next command. It fails tb when the
// server does not stop in 10s or does not come back.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	// The server closes the connection instead of replying.
	_ = c.Do(context.Background(), "SHUTDOWN", "NOSAVE").Err()
	_ = c.Close()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		tb.Fatalf("redis-server on %s did not stop in 10s after SHUTDOWN NOSAVE", s.Addr)
	}
	if err := s.start(s.cmd.Path); err != nil {
		tb.Fatal(err)
	}
	if err := s.waitReady(); err != nil {
		tb.Fatalf("restart on %s: %v", s.Addr, err)
	}
}

func (s *Server) waitReady() error {
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	s.exited = exited
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			return fmt.Errorf("redis-server exited: %s", lastLines(string(log)))
		default:
		}
		conn, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s did not accept connections in 10s", s.Addr)
}

func lastLines(s string) string {
	if len(s) > 500 {
		s = s[len(s)-500:]
	}
	return s
}

// Stop kills the server and removes its directory. Safe to call twice.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
	if s.exited != nil {
		<-s.exited
	}
	os.RemoveAll(s.Dir)
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

// Key returns a key unique to the test: "t:<test name>:<suffix>".
func Key(tb testing.TB, suffix string) string {
	return "t:" + tb.Name() + ":" + suffix
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
