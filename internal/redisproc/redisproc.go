// Package redisproc starts redis-server processes on free loopback ports:
// the scratch server of `lockctl trial` and every server of the tests
// (internal/redistest wraps it for testing.TB). It owns the process, its
// directory and its port; it never reads config or prints.
package redisproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotFound is returned by Binary and Launch when redis-server is not on
// PATH; callers say how to install it in their own words.
var ErrNotFound = errors.New("redis-server not found on PATH")

// readyTimeout bounds how long a server may take to accept connections.
const readyTimeout = 10 * time.Second

// Server is one running redis-server.
type Server struct {
	// Addr is host:port on 127.0.0.1 (the TLS port for a TLS-only server).
	Addr string
	// Port is Addr's TCP port.
	Port int
	// Dir is the server's working directory, removed by Stop.
	Dir string
	// Log is the server's log file, in Dir.
	Log string

	bin    string
	args   []string
	attr   *syscall.SysProcAttr
	cmd    *exec.Cmd
	exited chan struct{}
}

// Options say how to start a server.
type Options struct {
	// Args builds the server's arguments for the free port and the fresh
	// directory chosen (BaseArgs for a plain server).
	Args func(port int, dir string) []string
	// DirPattern names the directory (os.MkdirTemp's pattern); default
	// "lockctl-redis-".
	DirPattern string
	// Attr, when set, is the process's SysProcAttr (e.g. its own process
	// group, so a Ctrl-C to the terminal leaves it to its owner to stop).
	Attr *syscall.SysProcAttr
}

// Binary returns the path of redis-server, or ErrNotFound.
func Binary() (string, error) {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", ErrNotFound
	}
	return p, nil
}

// BaseArgs are the arguments of a plain server: loopback only, no
// persistence (nothing survives a restart), its log file in dir.
func BaseArgs(port int, dir string) []string {
	return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}
}

// Launch starts redis-server with o.Args for a free port and a fresh
// directory and waits up to 10 s (or until ctx ends) until it accepts TCP
// connections on a socket of its own (listensOn). It tries up to 5 ports,
// since a probed port may be taken before the server binds it. It returns
// ErrNotFound without the binary, else the last start's error, on one line
// (the last line of the server's log when it exited). The caller must Stop
// the server.
func Launch(ctx context.Context, o Options) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if o.DirPattern == "" {
		o.DirPattern = "lockctl-redis-"
	}
	var last error
	for range 5 {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", o.DirPattern)
		if err != nil {
			return nil, err
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Dir: dir,
			Log: filepath.Join(dir, "redis.log"), bin: bin, args: o.Args(port, dir), attr: o.Attr}
		if last = s.start(ctx); last == nil {
			return s, nil
		}
		s.Stop()
	}
	return nil, fmt.Errorf("redis-server did not start: %w", last)
}

// start runs the process and waits until it accepts connections, exits or
// ctx ends.
func (s *Server) start(ctx context.Context) error {
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.SysProcAttr = s.attr
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	s.exited = exited
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			log, _ := os.ReadFile(s.Log)
			return fmt.Errorf("redis-server exited: %s", lastLine(string(log)))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if conn, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond); err == nil {
			_ = conn.Close()
			return s.owned()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s did not accept connections in %s", s.Addr, readyTimeout)
}

// owned returns nil when the server that accepted a connection on s.Port is
// the process s started, else an error: another launch won a race for the
// port (this process then fails its bind and exits), and Launch tries
// another one.
func (s *Server) owned() error {
	ours, err := listensOn(s.cmd.Process.Pid, s.Port)
	switch {
	case err != nil:
		return fmt.Errorf("who listens on %s: %w", s.Addr, err)
	case !ours:
		return fmt.Errorf("port %d was taken by another process before redis-server bound it", s.Port)
	}
	return nil
}

// Restart stops the server with SHUTDOWN NOSAVE (SIGKILL when it has not
// exited within stopWait) and starts it again on the same port and
// arguments, empty: a cache-mode Redis that restarted, or a failover that
// lost the lock. Clients reconnect on their next command. It returns the
// new start's error.
func (s *Server) Restart(ctx context.Context, stopWait time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	_ = c.Do(ctx, "SHUTDOWN", "NOSAVE").Err() // the server closes the connection instead of replying
	_ = c.Close()
	select {
	case <-s.exited:
	case <-time.After(stopWait):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	return s.start(ctx)
}

// Stop kills the server and removes its directory. Safe to call twice.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
	if s.exited != nil {
		<-s.exited
	}
	_ = os.RemoveAll(s.Dir)
}

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lastLine is the last non-empty line of a server's log: why it exited.
func lastLine(log string) string {
	log = strings.TrimRight(log, "\n")
	return log[strings.LastIndexByte(log, '\n')+1:]
}
