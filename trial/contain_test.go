package trial

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/contain"
)

// procState is pid's state letter (proc(5)), 0 when it is gone.
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	return strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))[0][0]
}

// TestPauseReachesHelperInOwnSession: a worker's helper in a session of its
// own (setsid) that writes heartbeats stops writing during a pause (and is
// in state T, where pausing is SIGSTOP), writes again after it, and is
// gone at the trial's end, in each containment this machine has.
func TestPauseReachesHelperInOwnSession(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	modes := []string{contain.ModeSubreaper}
	if s, err := contain.New(contain.ModeCgroup); err == nil {
		_ = s.Close()
		modes = append(modes, contain.ModeCgroup)
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pids, beats := filepath.Join(dir, "pids"), filepath.Join(dir, "beats")
			worker := `setsid sh -c 'while :; do date +%s%N >> "$1"; sleep 0.02; done' helper "$1" & echo $! >> "$0"; exec sleep 3000`
			var stopped atomic.Int64
			done := make(chan struct{})
			go func() { // counts the samples in which the helper was seen stopped
				for {
					select {
					case <-done:
						return
					case <-time.After(10 * time.Millisecond):
					}
					if b, _ := os.ReadFile(pids); len(b) > 0 {
						pid, _ := strconv.Atoi(strings.Fields(string(b))[0])
						if procState(pid) == 'T' {
							stopped.Add(1)
						}
					}
				}
			}()
			res, err := Run(context.Background(), Options{Command: []string{"sh", "-c", worker, pids, beats}, Containment: mode,
				Duration: 4 * time.Second, FaultDuration: 1500 * time.Millisecond, Workers: 1, Nemeses: []string{FaultPause}, Seed: 1, Grace: time.Second, Env: os.Environ()})
			close(done)
			if err != nil {
				t.Fatal(err)
			}
			if res.Containment != mode {
				t.Errorf("containment %q, want %q", res.Containment, mode)
			}
			if len(res.Faults) == 0 || res.Faults[0].Kind != FaultPause || res.Faults[0].DurationMS == 0 {
				t.Fatalf("faults %+v: want a pause first", res.Faults)
			}
			from, err := time.Parse(time.RFC3339Nano, res.Faults[0].At)
			if err != nil {
				t.Fatal(err)
			}
			to := from.Add(time.Duration(res.Faults[0].DurationMS) * time.Millisecond)
			b, err := os.ReadFile(beats)
			if err != nil {
				t.Fatal(err)
			}
			var during, after int
			for _, f := range strings.Fields(string(b)) {
				ns, _ := strconv.ParseInt(f, 10, 64)
				at := time.Unix(0, ns)
				switch {
				case at.After(from.Add(200*time.Millisecond)) && at.Before(to.Add(-100*time.Millisecond)):
					during++
				case at.After(to):
					after++
				}
			}
			if during > 0 || after == 0 {
				t.Errorf("helper beat %d times during the pause (%s..%s) and %d after it: want 0 and some", during, from.Format(time.StampMilli), to.Format(time.StampMilli), after)
			}
			if mode == contain.ModeSubreaper && stopped.Load() == 0 {
				t.Errorf("helper never seen in state T during the pause")
			}
			pb, _ := os.ReadFile(pids)
			for _, f := range strings.Fields(string(pb)) {
				pid, _ := strconv.Atoi(f)
				if st := procState(pid); st != 0 {
					t.Errorf("helper %d left in state %c after the trial", pid, st)
				}
			}
		})
	}
}
