package simulate

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lockctl/lockctl/history"
)

// With every guard on, exploring the six guard-fixable scenarios finds no
// violation; with their guard off it finds that guard's counterexample, and
// the counterexample file replays to the same violations.
func TestExploreGuards(t *testing.T) {
	wantCode := map[string]string{
		"stale-writer": history.CodeStaleWrite, "unsafe-release": history.CodeForeignRelease, "renewal-loss": history.CodeLockLost,
		"crash-recovery": history.CodeDuplicate, "duplicate-delivery": history.CodeDuplicate, "long-budget": history.CodeOverlap,
		"redlock-late-pause": history.CodeStaleWrite,
	}
	for _, b := range Builtins() {
		if b.Guard == "" {
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			for _, random := range []bool{false, true} {
				sc, err := Builtin(b.Name, AllGuards(), Overrides{})
				if err != nil {
					t.Fatal(err)
				}
				o := ExploreOptions{Grid: 12, Random: random, Runs: 3000, Seed: 42}
				if b.Name == "long-budget" {
					o.Grid, o.Runs = 6, 40
				}
				res, err := Explore(context.Background(), sc, o)
				if err != nil {
					t.Fatal(err)
				}
				if res.Violating != 0 || res.Counterexample != nil {
					t.Errorf("all guards, random=%v: %d of %d violating: %+v", random, res.Violating, res.Schedules, res.ByCode)
				}
				sc.Guards = sc.Guards.With(b.Guard, false)
				res, err = Explore(context.Background(), sc, o)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(res.ByCode, func(c CodeCount) bool { return c.Code == wantCode[b.Name] }) || res.Counterexample == nil {
					t.Fatalf("%s off, random=%v: want %s, got %+v", b.Guard, random, wantCode[b.Name], res.ByCode)
				}
				replayed, err := ParseFile([]byte(res.Counterexample.File))
				if err != nil {
					t.Fatalf("counterexample does not parse: %v\n%s", err, res.Counterexample.File)
				}
				r, err := Run(replayed)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(r.Violations, res.Counterexample.Violations) {
					t.Errorf("replay differs:\n got %+v\nwant %+v", r.Violations, res.Counterexample.Violations)
				}
			}
		})
	}
}

func TestExploreCountsAndStops(t *testing.T) {
	sc, _ := Builtin("stale-writer", AllGuards().With("fencing", false), Overrides{})
	var done, total int
	res, err := Explore(context.Background(), sc, ExploreOptions{Grid: 5, Progress: func(d, t int) { done, total = d, t }})
	if err != nil {
		t.Fatal(err)
	}
	if done != 26 || total != 26 {
		t.Errorf("progress %d/%d, want 26/26", done, total)
	}
	// The base schedule plus a 5×5 grid of the pause's start and length.
	if res.Schedules != 26 || len(res.Dimensions) != 2 {
		t.Errorf("schedules %d dims %d", res.Schedules, len(res.Dimensions))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Explore(ctx, sc, ExploreOptions{Random: true, Runs: 100000, Seed: 1}); err == nil {
		t.Error("a cancelled exploration must stop with ctx's error")
	}
}

// BenchmarkExplore measures schedules per second on one core (goal ≥ 100,000/s).
func BenchmarkExplore(b *testing.B) {
	for _, name := range []string{"stale-writer", "renewal-loss", "unsafe-release"} {
		b.Run(name, func(b *testing.B) {
			sc, _ := Builtin(name, AllGuards(), Overrides{})
			runs := 0
			for b.Loop() {
				res, err := Explore(context.Background(), sc, ExploreOptions{Random: true, Runs: 10000, Seed: 7})
				if err != nil {
					b.Fatal(err)
				}
				runs += res.Schedules
			}
			b.ReportMetric(float64(runs)/b.Elapsed().Seconds(), "schedules/s")
		})
	}
}

// A cancelled context stops an exploration whatever its size: a random one
// of fewer than 4096 runs (it ran to the end), and a grid cancelled during
// its first schedules (it ran on to the next 4096th).
func TestExploreStopsPromptly(t *testing.T) {
	sc, _ := Builtin("stale-writer", AllGuards(), Overrides{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Explore(ctx, sc, ExploreOptions{Random: true, Runs: 100, Seed: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before a 100-run exploration: err %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	res, err := Explore(ctx, sc, ExploreOptions{Grid: 100, Progress: func(done, _ int) {
		if done == 0 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) || res.Schedules > 1 {
		t.Errorf("cancelled at the grid's first schedule: err %v after %d schedules, want context.Canceled after the base one", err, res.Schedules)
	}
}

// A run checks its context inside one schedule: a scenario with 720,000
// renewals stops at once.
func TestEngineStops(t *testing.T) {
	sc, err := ParseFile([]byte("name: slow\npolicy: {lease: 30s, renew_every: 10ms}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n  - {at: 0s, actor: A, do: work, for: 2h}\n"))
	if err != nil {
		t.Fatal(err)
	}
	sc.normalize()
	p, err := sc.resolve()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e := newEngine(&sc, p, sc.Guards, false)
	e.stop = newStopper(ctx)
	if err := e.run(); !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v, want context.Canceled", err)
	}
	if e.now > 0 {
		t.Errorf("the run went on to %d ms", e.now)
	}
	if _, err := runScenario(sc, e.stop); !errors.Is(err, context.Canceled) {
		t.Errorf("runScenario: %v, want context.Canceled", err)
	}
}

// The grid is lowered to fit MaxGridSchedules, never overflows, and is
// refused when even 2 points per dimension do not fit.
func TestGridPoints(t *testing.T) {
	pauses := func(n int) Scenario {
		sc := Scenario{Name: "pauses", Policy: PolicySpec{Lease: 30 * time.Second}, Guards: AllGuards(),
			Steps: []Step{{Actor: "A", Do: ActAcquire}}}
		for i := range n {
			sc.Steps = append(sc.Steps, Step{AtMS: int64(i+1) * 1000, Actor: "A", Do: ActPause, ForMS: 1000})
		}
		return sc
	}
	for _, tc := range []struct {
		pauses, grid, points int
	}{
		{0, 12, 12}, {1, 12, 12}, {1, 2000, 1414}, {1, math.MaxInt, 1414}, {3, 12, 11}, {10, 12, 2}, {10, math.MaxInt, 2},
	} {
		points, dims, err := GridPoints(pauses(tc.pauses), tc.grid)
		if err != nil || points != tc.points || dims != 2*tc.pauses {
			t.Errorf("%d pauses, grid %d: %d points, %d dims, %v; want %d points, %d dims", tc.pauses, tc.grid, points, dims, err, tc.points, 2*tc.pauses)
		}
	}
	for _, n := range []int{11, 30, 40} {
		var gerr *GridTooLargeError
		if _, _, err := GridPoints(pauses(n), 12); !errors.As(err, &gerr) || gerr.Dimensions != 2*n {
			t.Errorf("%d pauses: err %v, want a GridTooLargeError of %d dimensions", n, err, 2*n)
		}
	}
	// 21 dimensions: 2^21 is over the cap, and Explore refuses it too.
	sc := pauses(10)
	sc.Steps = append(sc.Steps, Step{AtMS: 20000, Actor: "B", Do: ActCrash})
	var gerr *GridTooLargeError
	if _, err := Explore(context.Background(), sc, ExploreOptions{Grid: 2}); !errors.As(err, &gerr) || gerr.Dimensions != 21 {
		t.Errorf("Explore of 21 dimensions: err %v, want a GridTooLargeError", err)
	}
}

// With nothing to vary, a random exploration runs the base schedule once
// and counts one (it counted --runs identical runs).
func TestExploreNothingToVary(t *testing.T) {
	sc, _ := Builtin("duplicate-delivery", AllGuards(), Overrides{})
	res, err := Explore(context.Background(), sc, ExploreOptions{Random: true, Runs: 5000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Schedules != 1 || len(res.Dimensions) != 0 {
		t.Errorf("%d schedules over %d dimensions, want 1 over none", res.Schedules, len(res.Dimensions))
	}
}
