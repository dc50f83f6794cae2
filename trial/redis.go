package trial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoRedisServer: the scratch server needs redis-server on PATH.
var ErrNoRedisServer = errors.New("redis-server not found on PATH: a trial starts a scratch Redis; install Debian's package redis-server (apt-get install redis-server), or give --redis URL --yes")

// scratchRedis is a redis-server lockctl started on a free loopback port,
// with no persistence, in a directory of its own.
type scratchRedis struct {
	addr   string
	dir    string
	bin    string
	args   []string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startScratch starts redis-server on a free 127.0.0.1 port and waits up to
// 10s until it answers PING. It returns ErrNoRedisServer when the binary is
// missing.
func startScratch(ctx context.Context) (*scratchRedis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedisServer
	}
	var last error
	for range 3 { // the free port may be taken between the probe and the bind
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "lockctl-trial-redis-")
		if err != nil {
			return nil, err
		}
		s := &scratchRedis{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, bin: bin,
			args: []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}}
		if last = s.start(ctx); last == nil {
			return s, nil
		}
		s.stop()
	}
	return nil, fmt.Errorf("scratch redis-server did not start: %w", last)
}

func (s *scratchRedis) start(ctx context.Context) error {
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.SysProcAttr = groupAttr()
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	s.exited = exited
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server exited: %s", lastLine(string(log)))
		default:
		}
		if c.Ping(ctx).Err() == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s did not answer PING in 10s", s.addr)
}

// restart stops the server (SHUTDOWN NOSAVE, SIGKILL after 5s) and starts
// it again, empty, on the same port: a failover that lost the lock.
func (s *scratchRedis) restart(ctx context.Context) error {
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	_ = c.Do(ctx, "SHUTDOWN", "NOSAVE").Err() // the server closes the connection instead of replying
	_ = c.Close()
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	return s.start(ctx)
}

// stop ends the server and removes its directory.
func (s *scratchRedis) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	_ = os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLine(s string) string {
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}
