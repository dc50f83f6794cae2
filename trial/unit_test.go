package trial

import (
	"bufio"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/internal/redistest"
)

func ptr[T any](v T) *T { return &v }

func TestJudgeHistory(t *testing.T) {
	t.Parallel()
	op := func(w int, kind string, at int64, fence int64, key string) Op {
		o := Op{Op: kind, Resource: "r", Worker: w, AtMS: at}
		if fence > 0 {
			o.Fence = ptr(fence)
		}
		if key != "" {
			o.Key = ptr(key)
		}
		return o
	}
	for _, tc := range []struct {
		name string
		ops  []Op
		want []string
	}{
		{"in order", []Op{op(1, OpOK, 10, 1, ""), op(2, OpOK, 20, 2, "")}, nil},
		{"stale after a returned newer write", []Op{op(2, OpOK, 10, 2, ""), op(1, OpInvoke, 15, 1, ""), op(1, OpOK, 20, 1, "")}, []string{history.CodeStaleWrite}},
		{"overlapping writes are no proof", []Op{op(1, OpInvoke, 5, 1, ""), op(2, OpOK, 10, 2, ""), op(1, OpOK, 20, 1, "")}, nil},
		{"failed writes are not judged", []Op{op(2, OpOK, 10, 2, ""), op(1, OpFail, 20, 1, "")}, nil},
		{"ok without invoke counts from its ok", []Op{op(2, OpOK, 10, 2, ""), op(1, OpOK, 20, 1, "")}, []string{history.CodeStaleWrite}},
		{"repeated key", []Op{op(1, OpOK, 10, 0, "k"), op(2, OpOK, 20, 0, "k")}, []string{history.CodeDuplicate}},
		{"commit order decides, not the lines' times", []Op{withSeq(op(1, OpOK, 10, 1, ""), 2), withSeq(op(2, OpOK, 20, 2, ""), 1)}, []string{history.CodeStaleWrite}},
		{"commit order in fence order", []Op{withSeq(op(2, OpOK, 10, 2, ""), 2), withSeq(op(1, OpOK, 20, 1, ""), 1)}, nil},
	} {
		if got := codes(judgeHistory(tc.ops)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func withSeq(op Op, seq int64) Op {
	op.Seq = &seq
	return op
}

func TestParseOp(t *testing.T) {
	t.Parallel()
	if op, ok := parseOp(`{"op":"ok","resource":"a","fence":3,"key":"k"}`); !ok || *op.Fence != 3 || *op.Key != "k" {
		t.Errorf("parseOp: %+v %v", op, ok)
	}
	for _, line := range []string{"hello", `{"op":"write"}`, `{"op":`, ""} {
		if _, ok := parseOp(line); ok {
			t.Errorf("parseOp(%q) took it as an operation", line)
		}
	}
}

func TestScheduleIsReproducible(t *testing.T) {
	t.Parallel()
	a := schedule(7, DefaultNemeses, time.Second, 30*time.Second, 3)
	b := schedule(7, DefaultNemeses, time.Second, 30*time.Second, 3)
	c := schedule(8, DefaultNemeses, time.Second, 30*time.Second, 3)
	if len(a) < 5 || !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Errorf("seed 7 twice: %v / %v; seed 8: %v", a, b, c)
	}
	if len(schedule(1, nil, time.Second, time.Minute, 3)) != 0 {
		t.Error("no nemesis still scheduled faults")
	}
}

func TestGlobMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p, s string
		ok   bool
	}{{"lock:*", "lock:a", true}, {"lock:*", "{lock:a}:fence", false}, {"l?ck:[ab]", "lock:b", true}, {"lock:[^a]", "lock:a", false},
		{"lock:[a-c]x", "lock:bx", true}, {`lock:\*`, "lock:*", true}, {`lock:\*`, "lock:a", false}, {"*", "", true}} {
		if globMatch(tc.p, tc.s) != tc.ok {
			t.Errorf("globMatch(%q, %q) = %v", tc.p, tc.s, !tc.ok)
		}
	}
}

func TestReadCommand(t *testing.T) {
	t.Parallel()
	r := bufio.NewReader(strings.NewReader("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\nPING\r\n"))
	if a, err := readCommand(r); err != nil || !slices.Equal(a, []string{"SET", "k", "v1"}) {
		t.Errorf("RESP: %q %v", a, err)
	}
	if a, err := readCommand(r); err != nil || !slices.Equal(a, []string{"PING"}) {
		t.Errorf("inline: %q %v", a, err)
	}
}

// TestProxyStallsAndObserves: commands through a proxy reach Redis and are
// seen with the worker's number; a stall holds a reply until it ends.
func TestProxyStallsAndObserves(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	o := &owners{pattern: "lock:*", byToken: map[string]int{}}
	p, err := newProxy(2, srv.Addr, nil, o.observe)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	send := func(cmd string) string {
		if _, err := c.Write([]byte(cmd)); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	send("*4\r\n$3\r\nSET\r\n$6\r\nlock:b\r\n$4\r\ntok2\r\n$2\r\nNX\r\n")
	// The parser reads a copy of the bytes on a goroutine of its own.
	for deadline := time.Now().Add(time.Second); o.worker("tok2") != 2 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if o.worker("tok2") != 2 {
		t.Error("owner tok2 not seen from worker 2")
	}
	p.stall(300 * time.Millisecond)
	start := time.Now()
	if got := send("PING\r\n"); got != "+PONG\r\n" {
		t.Errorf("PING through the proxy: %q", got)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("PING answered after %s through a 300ms stall", d)
	}
}

// TestParseNemeses: "none" alone turns faults off; with other faults, or an
// unknown word, the error names the value and the accepted ones.
func TestParseNemeses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []string
		want []string
		err  string
	}{
		{in: []string{"none"}, want: []string{}},
		{in: []string{"pause", "kill", "pause"}, want: []string{"pause", "kill"}},
		{in: []string{"none", "pause"}, err: "nemesis none cannot be combined with other faults (none,pause)"},
		{in: []string{"pause", "none"}, err: "nemesis none cannot be combined with other faults (pause,none)"},
		{in: []string{"pause", ""}, err: `nemesis "" is not one of pause, kill, partition, expire, restart (or none)`},
	} {
		got, err := ParseNemeses(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseNemeses(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseNemeses(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
