package cmd

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/trial"
)

// trialSample is a small trial result: a lock held by w1, a pause of w1, a
// restart of Redis, and a stale write seen by the client history and the
// store.
func trialSample() trial.Result {
	fence := int64(3)
	return trial.Result{Verdict: history.VerdictUnsafe, Seed: 7, Workers: 2, DurationMS: 4000, Command: []string{"./w.sh"}, Nemeses: []string{"pause", "restart"},
		Events: []trial.Event{{AtMS: 100, Key: "lock:a", Event: "ACQUIRED", Worker: 1}, {AtMS: 1900, Key: "lock:a", Event: "EXPIRED", Worker: 1}, {AtMS: 2000, Key: "lock:a", Event: "ACQUIRED"}},
		Faults: []trial.Fault{{Kind: "pause", AtMS: 1000, DurationMS: 1500, Worker: 1, Key: "lock:a", Note: "holds lock:a"}, {Kind: "restart", AtMS: 3000, Note: "redis-server restarted empty"}},
		Violations: []trial.Violation{{Code: history.CodeStaleWrite, AtMS: 2600, Worker: 1, Source: trial.SourceClient, Fence: &fence, Detail: "fence 3 after 4"},
			{Code: history.CodeInvariant, AtMS: 4000, Source: trial.SourceStore, Detail: "1 row", Rows: [][]string{{"9", "11"}}}}}
}

func TestTrialRowsInTimeOrder(t *testing.T) {
	_, rows := trialRows(trialSample())
	var got []string
	for _, r := range rows {
		got = append(got, r[0]+" "+r[2])
	}
	want := "1s FAULT pause 1.5s|1.9s EXPIRED|2.6s STALE_WRITE_ACCEPTED|3s FAULT restart|4s INVARIANT_VIOLATED"
	if strings.Join(got, "|") != want {
		t.Errorf("rows %q\nwant %q", strings.Join(got, "|"), want)
	}
}

// TestTrialMermaid: every note is over a declared participant: faults on
// Redis and unknown holders over R, the store's violations over S.
func TestTrialMermaid(t *testing.T) {
	out := mermaid(trialSample().History())
	for _, want := range []string{"participant w2", "participant S as Store", "w1->>R: 100ms acquired lock:a", "Note over w1: 1s FAULT pause 1.5s: holds lock:a",
		"Note over R: 3s FAULT restart: redis-server restarted empty", "Note over R: 2s lock:a acquired (-)", "Note over S: INVARIANT_VIOLATED at 4s: 1 row"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "over -") || strings.Contains(out, "-->>") {
		t.Errorf("a note over no participant:\n%s", out)
	}
}
