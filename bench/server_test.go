package bench

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// benchAddr is the host:port of the redis-server TestMain starts for this
// run; every library under test talks to the same server.
var benchAddr string

// TestMain starts one redis-server (no persistence, loopback, free port) for
// all benchmarks and stops it afterwards. It is a minimal copy of
// internal/redistest, which another module cannot import.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "lockctl-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	if err := srv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start redis-server (apt-get install redis-server):", err)
		return 1
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	benchAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", benchAddr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "redis-server did not start on", benchAddr)
			return 1
		}
	}
	return m.Run()
}
