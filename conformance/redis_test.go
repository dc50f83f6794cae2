package conformance

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is one redis-server for one test, on a free loopback port, with no
// persistence; stopped when the test ends. A launcher of its own because
// internal/redistest cannot be imported from this module.
type server struct {
	addr string
}

// startServer launches redis-server and waits until it answers PING (5 s at most).
func startServer(t *testing.T) *server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found on PATH: apt-get install redis-server")
	}
	for try := 0; try < 3; try++ {
		port := freePort(t)
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", t.TempDir())
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		s := &server{addr: fmt.Sprintf("127.0.0.1:%d", port)}
		if s.waitReady() {
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			return s
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	t.Fatalf("redis-server did not answer PING in 3 tries")
	return nil
}

func (s *server) url() string { return "redis://" + s.addr + "/0" }

// client returns a go-redis client, closed when t ends; the test's own reads
// and cleanup only, never a lock library's.
func (s *server) client(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (s *server) waitReady() bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", s.addr, 200*time.Millisecond); err == nil {
			_, _ = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			n, _ := c.Read(buf)
			_ = c.Close()
			if string(buf[:n]) == "+PONG\r\n" {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
