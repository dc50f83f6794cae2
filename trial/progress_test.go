package trial

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// Progress is called while the trial runs, with its counts growing, the
// phases in order, and never after Run returned.
func TestProgressSnapshots(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []Progress
	returned := false
	res, err := Run(context.Background(), Options{Command: []string{script(t, "unfenced.sh")}, Duration: 2 * time.Second,
		FaultDuration: 300 * time.Millisecond, Nemeses: []string{FaultKill}, Seed: 1, Grace: time.Second, Env: os.Environ(),
		Progress: func(p Progress) {
			mu.Lock()
			defer mu.Unlock()
			if returned {
				t.Error("Progress called after Run returned")
			}
			got = append(got, p)
		}})
	mu.Lock()
	returned = true
	defer mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal("Progress was never called")
	}
	rank := map[string]int{PhaseRunning: 0, PhaseStopping: 1, PhaseJudging: 2}
	for i, p := range got {
		if p.Duration != 2*time.Second {
			t.Fatalf("snapshot %d: duration %s", i, p.Duration)
		}
		if _, ok := rank[p.Phase]; !ok {
			t.Fatalf("snapshot %d: phase %q", i, p.Phase)
		}
		if i == 0 {
			continue
		}
		q := got[i-1]
		if p.Elapsed < q.Elapsed || p.Faults < q.Faults || p.Ops < q.Ops || rank[p.Phase] < rank[q.Phase] {
			t.Errorf("snapshot %d %+v went back from %+v", i, p, q)
		}
	}
	last := got[len(got)-1]
	if last.Faults > len(res.Faults) || last.Ops > res.Ops {
		t.Errorf("last snapshot %+v counts more than the result (%d faults, %d ops)", last, len(res.Faults), res.Ops)
	}
	if got[0].Phase != PhaseRunning {
		t.Errorf("first snapshot %+v: want phase running", got[0])
	}
}
