package redisproc

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// serverPID is the process_id that the server on addr reports (INFO server).
func serverPID(t *testing.T, addr string) int {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatalf("INFO on %s: %v", addr, err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			pid, _ := strconv.Atoi(v)
			return pid
		}
	}
	t.Fatalf("INFO on %s has no process_id", addr)
	return 0
}

// Twenty launches at once get twenty servers, each the process launched:
// a launch that lost a race for its port must not hand back the winner's.
func TestLaunchManyAtOnceGetsDistinctServers(t *testing.T) {
	if _, err := Binary(); err != nil {
		t.Fatal(err)
	}
	const n = 20
	servers := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { servers[i], errs[i] = Launch(context.Background(), Options{Args: BaseArgs}) })
	}
	wg.Wait()
	for _, s := range servers {
		if s != nil {
			defer s.Stop()
		}
	}
	seen := map[int]int{}
	for i, s := range servers {
		if errs[i] != nil {
			t.Fatalf("launch %d: %v", i, errs[i])
		}
		pid := serverPID(t, s.Addr)
		if pid != s.cmd.Process.Pid {
			t.Errorf("launch %d on %s: the server there is pid %d, not the launched %d", i, s.Addr, pid, s.cmd.Process.Pid)
		}
		if j, dup := seen[pid]; dup {
			t.Errorf("launches %d and %d got the same server (pid %d)", j, i, pid)
		}
		seen[pid] = i
	}
}

// A port that another process listens on before redis-server binds it is
// refused, though a connect to it succeeds: the race above, made certain.
func TestStartRefusesAPortAnotherProcessHolds(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	s := &Server{Addr: l.Addr().String(), Port: port, Dir: t.TempDir(), bin: bin, args: BaseArgs(port, t.TempDir())}
	defer s.Stop()
	err = s.start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "taken by another process") && !strings.Contains(err.Error(), "exited") {
		t.Fatalf("start on a port held by another listener: %v, want it refused", err)
	}
}
