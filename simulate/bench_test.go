package simulate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/history"
)

// manyActors is a scenario of n actors taking the lock in turn: each
// acquires at i s and releases 500 ms later (2n events).
func manyActors(n int) Scenario {
	sc := Scenario{Name: fmt.Sprintf("actors-%d", n), Policy: PolicySpec{Lease: 30 * time.Second}, Guards: AllGuards()}
	for i := range n {
		name := fmt.Sprintf("A%d", i)
		at := int64(i) * 1000
		sc.Steps = append(sc.Steps,
			Step{AtMS: at, Actor: name, Do: ActAcquire},
			Step{AtMS: at + 500, Actor: name, Do: ActRelease})
	}
	return sc
}

// BenchmarkSimulateActors measures Run over scenarios of growing actor
// counts up to MaxActors, then the engine alone past the limits (10,000
// actors, 20,000 events): time and memory per op grow linearly.
func BenchmarkSimulateActors(b *testing.B) {
	for _, n := range []int{1000, 2000, MaxActors} {
		sc := manyActors(n)
		b.Run(fmt.Sprintf("actors=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Run(sc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	sc := manyActors(2 * MaxActors)
	sc.normalize()
	p, err := sc.Policy.resolve()
	if err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("actors=%d-engine", 2*MaxActors), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for range 1 + len(GuardNames) { // Run's runs: the scenario, then each guard flipped
				if err := newEngine(&sc, p, sc.Guards, true).run(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// A scenario over MaxActors actors or MaxSteps events is refused, naming
// the count and the limit.
func TestRunRefusesOversized(t *testing.T) {
	sc := Scenario{Name: "crowd", Policy: PolicySpec{Lease: 30 * time.Second}}
	for i := range MaxActors + 1 {
		sc.Steps = append(sc.Steps, Step{AtMS: int64(i), Actor: fmt.Sprintf("A%d", i), Do: ActAcquire})
	}
	if _, err := Run(sc); err == nil || err.Error() != fmt.Sprintf(`scenario "crowd" has %d actors; at most %d`, MaxActors+1, MaxActors) {
		t.Errorf("%d actors: %v", MaxActors+1, err)
	}
	sc = manyActors(MaxSteps/2 + 1)
	sc.Name = "long"
	if _, err := Run(sc); err == nil || err.Error() != `scenario "long" has 10002 events; at most 10000` {
		t.Errorf("%d events: %v", len(sc.Steps), err)
	}
}

// The 5,000 actors of lockctl issue 19, 2 events each, are played (they
// were refused before); how fast is BenchmarkSimulateActors' question.
func TestRunIssue19Actors(t *testing.T) {
	const n = 5000
	res, err := Run(manyActors(n))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lanes) != n || res.Verdict != history.VerdictSafe || res.EndMS != (n-1)*1000+500 {
		t.Errorf("%d lanes, verdict %s, end %d ms", len(res.Lanes), res.Verdict, res.EndMS)
	}
}

// BenchmarkRedlockExplore measures random exploration over node faults on
// 5 Redlock nodes (schedules per second; docs/benchmarks.md): scenario B's
// clock jump and partitions, the delayed restart's crash and restart. Its
// name keeps it out of bench/run's BenchmarkExplore rows and their goal.
func BenchmarkRedlockExplore(b *testing.B) {
	for _, name := range []string{"redlock-clock-jump", "redlock-slow-boot"} {
		b.Run(name, func(b *testing.B) {
			sc, err := Builtin(name, AllGuards().With("fencing", false), Overrides{})
			if err != nil {
				b.Fatal(err)
			}
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
