package simulate

import (
	"fmt"
	"testing"
	"time"
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
// counts: memory per op grows linearly; time still with actors × steps.
func BenchmarkSimulateActors(b *testing.B) {
	for _, n := range []int{500, 1000, MaxActors} {
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
