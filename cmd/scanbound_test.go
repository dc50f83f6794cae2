package cmd_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
)

// endlessScanServer speaks just enough RESP2 for inspect --pattern and
// answers every SCAN with a cursor that is never 0: the first page holds
// one lock key, the rest none. It returns its address and the number of
// SCAN calls served. A hostile server: the one place a fake is the thing
// under test.
func endlessScanServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var scans atomic.Int64
	bulk := func(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }
	serve := func(c net.Conn) {
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			args, err := readCommand(r)
			if err != nil {
				return
			}
			var reply string
			switch strings.ToUpper(args[0]) {
			case "PING":
				reply = "+PONG\r\n"
			case "INFO":
				reply = bulk("# Cluster\r\ncluster_enabled:0\r\n")
			case "DBSIZE":
				reply = ":1\r\n"
			case "SCAN":
				page := "*0\r\n"
				if scans.Add(1) == 1 {
					page = "*1\r\n" + bulk("lock:endless:1")
				}
				reply = "*2\r\n" + bulk("7") + page
			case "GETRANGE":
				reply = bulk("owner-1")
			case "PTTL":
				reply = ":30000\r\n"
			case "HELLO":
				reply = "-ERR unknown command 'HELLO'\r\n"
			default:
				reply = "$-1\r\n"
			}
			if _, err := io.WriteString(c, reply); err != nil {
				return
			}
		}
	}
	acceptEach(ln, serve)
	return ln.Addr().String(), &scans
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("not a command: %q", line)
	}
	args := make([]string, n)
	for i := range args {
		if _, err := r.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		s, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args[i] = strings.TrimSuffix(s, "\r\n")
	}
	return args, nil
}

// A server whose SCAN cursor never comes back to 0 is scanned up to the
// bound (docs/inspect.md), not forever: inspect prints what it found,
// marked partial, and exits 3 with one line.
func TestInspectScanBound(t *testing.T) {
	t.Parallel()
	addr, scans := endlessScanServer(t)
	start := time.Now()
	p, code := runLockctl(t, "redis://"+addr+"/0", "inspect", "--pattern", "lock:*", "-o", "json")
	var rep inspect.Report
	if err := json.Unmarshal(p.stdout.Bytes(), &rep); err != nil || code != 3 {
		t.Fatalf("exit %d (want 3), %v; stdout %s stderr %s", code, err, p.stdout.String(), p.stderr.String())
	}
	if len(rep.Locks) != 1 || rep.Locks[0].Key != "lock:endless:1" || !rep.Summary.Interrupted {
		t.Errorf("report %+v, want lock:endless:1 marked partial", rep)
	}
	oneLine(t, "scan bound", p.stderr.String(), "without its cursor coming back to 0", "the list is partial", addr)
	want := int64(inspect.ScanFloor / inspect.DefaultScanCount)
	if n := scans.Load(); n < want || n > want+2 {
		t.Errorf("%d SCAN calls, want %d (ScanFloor / COUNT)", n, want+1)
	}
	t.Logf("%d SCAN calls in %s", scans.Load(), time.Since(start))
}
