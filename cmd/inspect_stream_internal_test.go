package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/golden"
)

// trickyText are values that YAML and JSON each quote, escape or fold
// their own way: the streamed output must do it exactly as the whole
// document did.
var trickyText = []string{"", "yes", "on", "123", "null", "~", "a\nb", "  leading", "line1\n\nline3\n", "ключ", "\x1b[31mred",
	"tab\there", "#comment", "- dash", "key: colon", strings.Repeat("long words ", 30), "<&>", "\u202eexe.txt", "\"quoted\"", "'single'"}

// streamLocks are n locks of every shape the JSON has: TTLs tied, none,
// absent, holders, fences, findings, companions, with trickyText.
func streamLocks(n int) []inspect.Lock {
	locks := make([]inspect.Lock, n)
	for i := range locks {
		txt := trickyText[i%len(trickyText)]
		v, c := int64(i), int64(i+1)
		exp := "2026-12-03T10:00:00.000Z"
		l := inspect.Lock{Key: fmt.Sprintf("lock:%03d:%s", (n-i)%7, txt), Type: "string", Exists: i%11 != 0, PTTLMS: int64((i * 37) % 5 * 1000),
			ExpiresAt: &exp, Layout: inspect.Layout{Name: "lockctl", Confidence: "certain"}, Owner: txt, OwnerHex: fmt.Sprintf("%x", txt),
			ValueBytes: int64(len(txt)), Fence: &inspect.Fence{Value: &v, Counter: &c, CounterKey: "{k}:fence"}}
		switch i % 5 {
		case 0:
			l.PTTLMS, l.ExpiresAt = -1, nil
		case 1:
			l.Holder = &inspect.Holder{Host: txt, PID: int64(i)}
			l.Findings = []inspect.Finding{{Code: "NO_TTL", Severity: "error", Message: "message " + txt, Reason: txt}}
		case 2:
			l.PTTLMS = -2
			l.Waiters = []string{txt, "w2"}
		case 3:
			l.Role = "fence_counter"
			l.Layout.Candidates = []string{"a", "b"}
		}
		if i%13 == 0 {
			l.Findings = []inspect.Finding{}
		}
		locks[i] = l
	}
	return locks
}

// wholeReport is what inspect --pattern printed before it streamed: the
// locks sorted, the Report printed whole.
func wholeReport(t *testing.T, format string, locks []inspect.Lock, interrupted bool) []byte {
	t.Helper()
	sorted := append([]inspect.Lock(nil), locks...)
	inspect.SortByTTL(sorted)
	rep := inspect.NewReport(sorted)
	rep.Summary.Interrupted = interrupted
	var b bytes.Buffer
	if err := (&Printer{Format: format, Out: &b}).Print(rep, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sorted is locks added to a lockSorter with runs of limit bytes (closed
// at the test's end), and their summary: what a scan leaves to streamScan.
func sorted(t *testing.T, locks []inspect.Lock, limit int, interrupted bool) (*lockSorter, inspect.Summary) {
	t.Helper()
	s := newLockSorter()
	t.Cleanup(s.close)
	s.limit = limit
	sum := inspect.NewSummary()
	for i := range locks {
		sum.Add(&locks[i])
		if err := s.add(&locks[i]); err != nil {
			t.Fatal(err)
		}
	}
	sum.Interrupted = interrupted
	return s, sum
}

func streamed(t *testing.T, format string, locks []inspect.Lock, limit int, interrupted bool) []byte {
	t.Helper()
	s, sum := sorted(t, locks, limit, interrupted)
	var b bytes.Buffer
	if err := streamReport(context.Background(), &b, format, s, sum); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestStreamedReportIsTheWholeOne: inspect --pattern -o json and -o yaml,
// now streamed from sorted runs, print byte for byte what the whole Report
// printed, for no lock, a few, and many spilled over several runs (the
// golden files hold the small case as printed whole).
func TestStreamedReportIsTheWholeOne(t *testing.T) {
	for _, format := range []string{formatJSON, formatYAML} {
		for _, n := range []int{0, 1, 40, 700} {
			for _, limit := range []int{spillBytes, 2 << 10} {
				locks := streamLocks(n)
				want := wholeReport(t, format, locks, n == 40)
				got := streamed(t, format, locks, limit, n == 40)
				if !bytes.Equal(got, want) {
					i := 0
					for i < len(got) && i < len(want) && got[i] == want[i] {
						i++
					}
					t.Errorf("%s, %d locks, runs of %d bytes: differs at byte %d:\ngot  %q\nwant %q", format, n, limit, i,
						got[max(0, i-80):min(len(got), i+80)], want[max(0, i-80):min(len(want), i+80)])
				}
			}
		}
	}
	t.Run("json", func(t *testing.T) { golden.Assert(t, wholeReport(t, formatJSON, streamLocks(40), false), ".json") })
	t.Run("yaml", func(t *testing.T) { golden.Assert(t, wholeReport(t, formatYAML, streamLocks(40), false), ".yaml") })
}

// slowWriter takes each write a while: a pipe to a slow reader.
type slowWriter struct{ b bytes.Buffer }

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(20 * time.Millisecond)
	return w.b.Write(p)
}

// TestStreamScanAfterSignalIsBounded: after a signal stopped the scan,
// the locks read are printed for partialPrintFor at most, not all of them
// (yaml of 30,000 went on for 8.5 s after SIGTERM, issue 43): here a
// reader slow enough that printing all would take over 10 s gets a closed
// document, marked interrupted, with fewer locks, and the signal's error.
func TestStreamScanAfterSignalIsBounded(t *testing.T) {
	locks := streamLocks(20000)
	s, sum := sorted(t, locks, spillBytes, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the scan's signal
	var w slowWriter
	opts := &InspectOptions{Format: formatYAML, Printer: &Printer{Format: formatYAML, Out: &w}}
	err := streamScan(ctx, opts, s, sum, false)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v: want the scan's signal (context canceled)", err)
	}
	doc := w.b.String()
	n := strings.Count(doc, "\n  - key: ")
	if n >= len(locks) || !strings.HasSuffix(doc, "  interrupted: true\n") {
		t.Errorf("%d of %d locks written, document ends %q: want it cut short, closed and marked interrupted", n, len(locks), doc[max(0, len(doc)-200):])
	}
	t.Logf("%d of %d locks written (%d bytes)", n, len(locks), len(doc))
}
