package cmd_test

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileServer listens on a loopback port and answers each command (read
// with readCommand) with what answer returns for its arguments, on every
// connection. A hostile server: the one place a fake is the thing under test.
func hostileServer(t *testing.T, answer func(args []string) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	serve := func(c net.Conn) {
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			args, err := readCommand(r)
			if err != nil {
				return
			}
			if _, err := io.WriteString(c, answer(args)); err != nil {
				return
			}
		}
	}
	acceptEach(ln, serve)
	return ln.Addr().String()
}

// TestDeepReply: a reply of 600k levels of "*1" (2.3 MB, issue 33) made
// run and inspect die of a stack overflow (exit 2, 1 GB RSS); the guard
// refuses it past 128 levels, one line, exit 3.
func TestDeepReply(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("*1\r\n", 600_000) + "+x\r\n"
	// Deep where an array is a reply the command may give (SCAN, EVALSHA):
	// elsewhere the guard refuses its type first (TestWatchOutOfStep).
	addr := hostileServer(t, func(args []string) string {
		switch strings.ToUpper(args[0]) {
		case "PING":
			return "+PONG\r\n"
		case "HELLO":
			return "-ERR unknown command 'HELLO'\r\n"
		case "INFO":
			return "$30\r\n# Cluster\r\ncluster_enabled:0\r\n\r\n"
		case "DBSIZE":
			return ":1\r\n"
		case "SCAN", "EVALSHA", "EVAL":
			return deep
		}
		return "$-1\r\n"
	})
	for _, args := range [][]string{
		{"inspect", "--pattern", "lock:*"},
		{"run", "order-1", "--budget", "10s", "--", "true"},
	} {
		p, code := runLockctl(t, "redis://"+addr+"/0", args...)
		if code != 3 {
			t.Errorf("%s: exit %d, want 3; stderr %.300q", args[0], code, p.stderr.String())
		}
		oneLine(t, args[0], p.stderr.String(), "more than 128 levels deep", addr)
	}
}

// TestTimeoutBoundsTheCommand: --timeout 2s against a server slow to
// answer took 6.7 to 10.7 s (issue 33): PING, the cluster probe and each
// read waited one --timeout each. Each reply here comes 800ms late, under
// the 1s --timeout, so the old design answered after 4 or more of them
// (3.2 s and more, exit 0); now the connection and the reads of named keys
// wait one --timeout together, and the server sees lockctl go before 3 late
// replies could have come (measured on its side: lockctl's start-up under
// load does not count).
func TestTimeoutBoundsTheCommand(t *testing.T) {
	t.Parallel()
	const delay = 800 * time.Millisecond
	var mu sync.Mutex
	var spans []time.Duration
	addr := slowServer(t, delay, func(d time.Duration) {
		mu.Lock()
		spans = append(spans, d)
		mu.Unlock()
	})
	for _, args := range [][]string{{"inspect", "order-1"}, {"unlock", "order-1", "--owner", "x"}} {
		p, code := runLockctl(t, "redis://"+addr+"/0", append(args, "--timeout", "1s")...)
		if code != 3 {
			t.Errorf("%s: exit %d, want 3; stderr %q", args[0], code, p.stderr.String())
		}
		oneLine(t, args[0], p.stderr.String(), "no answer within 1s (--timeout)")
	}
	time.Sleep(100 * time.Millisecond) // the server's last EOF
	mu.Lock()
	defer mu.Unlock()
	for _, d := range spans {
		if d >= 3*delay {
			t.Errorf("a connection lasted %s from its first command, past 3 late replies (%s): the timeout was not one for the command", d, 3*delay)
		}
	}
}

// slowServer answers PING, INFO and everything else (a nil) delay late,
// and reports, per connection, the time from its first command to its end.
func slowServer(t *testing.T, delay time.Duration, span func(time.Duration)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	serve := func(c net.Conn) {
		defer c.Close()
		r := bufio.NewReader(c)
		var first time.Time
		defer func() {
			if !first.IsZero() {
				span(time.Since(first))
			}
		}()
		for {
			args, err := readCommand(r)
			if err != nil {
				return
			}
			if first.IsZero() {
				first = time.Now()
			}
			time.Sleep(delay)
			reply := "$-1\r\n"
			switch strings.ToUpper(args[0]) {
			case "PING":
				reply = "+PONG\r\n"
			case "HELLO":
				reply = "-ERR unknown command 'HELLO'\r\n"
			case "INFO":
				reply = "$30\r\n# Cluster\r\ncluster_enabled:0\r\n\r\n"
			}
			if _, err := io.WriteString(c, reply); err != nil {
				return
			}
		}
	}
	acceptEach(ln, serve)
	return ln.Addr().String()
}

// TestWatchOutOfStep: a server that sends one extra reply puts the reply
// stream out of step, and watch read an integer meant for another command
// as the owner token: a bogus TAKEOVER (issue 33). The guard refuses the
// first reply of the wrong type: watch says so on stderr, reconnects (the
// server is in step on a new connection) and sees the same owner throughout.
func TestWatchOutOfStep(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	served, extra := 0, false
	bulk := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	addr := hostileServer(t, func(args []string) string {
		reply := "$-1\r\n"
		switch strings.ToUpper(args[0]) {
		case "PING":
			reply = "+PONG\r\n"
		case "HELLO", "PEXPIRETIME":
			reply = "-ERR unknown command\r\n"
		case "INFO":
			reply = bulk("# Cluster\r\ncluster_enabled:0\r\n")
		case "TYPE":
			reply = "+string\r\n"
		case "PTTL":
			reply = ":30000\r\n"
		case "OBJECT", "EXISTS":
			reply = ":0\r\n"
		case "STRLEN":
			reply = ":13\r\n"
		case "GETRANGE":
			reply = bulk("owner-token-1")
		}
		mu.Lock()
		defer mu.Unlock()
		if served++; served == 40 && !extra { // once: one reply too many
			extra = true
			reply = ":0\r\n" + reply
		}
		return reply
	})
	p, code := runLockctl(t, "redis://"+addr+"/0", "watch", "order-1", "--interval", "20ms", "--duration", "1500ms", "-o", "jsonl")
	if code != 0 {
		t.Errorf("exit %d, want 0; stderr %q", code, p.stderr.String())
	}
	mu.Lock()
	if !extra {
		t.Fatalf("the server served %d commands, never the extra reply", served)
	}
	mu.Unlock()
	// The PTTL is always 30s: samples a loaded machine spaced out read as renewals.
	lines := strings.Split(strings.TrimSuffix(p.stdout.String(), "\n"), "\n")
	for i, l := range lines {
		if want := map[bool]string{true: `"event":"HELD"`, false: `"event":"RENEWED"`}[i == 0]; !strings.Contains(l, want) {
			t.Errorf("event %d %q: want %s (one owner throughout, no TAKEOVER)", i, l, want)
		}
	}
	if e := p.stderr.String(); !strings.Contains(e, "the reply stream is out of step") || !strings.Contains(e, "retrying") {
		t.Errorf("stderr %q: want the protocol error and a retry", e)
	}
}

// acceptEach serves every connection ln accepts with serve, each on its
// own goroutine, until ln is closed: the loop of the tests' fake servers.
func acceptEach(ln net.Listener, serve func(net.Conn)) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
}
