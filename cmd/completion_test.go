package cmd_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// silentServer accepts connections and never answers; it returns the
// listener's address. Connections are held until the test ends.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// Key completion against a server that accepts and never answers ends
// within its 0.5s budget, not after --timeout (10s here), and completes
// nothing (issue 19 §4).
func TestCompletionSilentServer(t *testing.T) {
	addr := silentServer(t)
	for _, args := range [][]string{{"__complete", "inspect", "order"}, {"__complete", "watch", "--key", "lock:"}} {
		c := exec.Command("lockctl", args...)
		home := t.TempDir()
		c.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "LOCKCTL_COMPLETE_KEYS=1",
			"LOCKCTL_REDIS_URL=redis://"+addr+"/0", "LOCKCTL_REDIS_TIMEOUT=10s")
		var out bytes.Buffer
		c.Stdout = &out
		start := time.Now()
		err := c.Run()
		took := time.Since(start)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		// Half the 10s --timeout: a loaded machine starts lockctl slowly, but
		// not that slowly, and a completion that waited on --timeout fails.
		if took > 5*time.Second {
			t.Errorf("%v took %s, want about 0.5s, not the 10s --timeout", args, took)
		}
		if got := strings.TrimSpace(out.String()); got != ":4" {
			t.Errorf("%v printed %q, want only the directive :4", args, got)
		}
		t.Logf("%v: %s", args, took)
	}
}
