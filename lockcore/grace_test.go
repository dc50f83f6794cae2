package lockcore

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The rows docs/run.md and run.txtar show: grace ≤ (lease − cancel margin
// − renew-every) / 2 in whole ms, never more than asked.
func TestClampGrace(t *testing.T) {
	cases := []struct {
		budget time.Duration
		cap    time.Duration
		mode   Mode
		grace  time.Duration
		want   time.Duration
	}{
		{300 * time.Millisecond, DefaultLeaseCap, ModeTrusted, 5 * time.Second, 97 * time.Millisecond}, // (300−5−100)/2 = 97.5
		{1200 * time.Second, 3 * time.Second, ModeTrusted, time.Second, 984 * time.Millisecond},        // (3000−32−1000)/2
		{2 * time.Second, DefaultLeaseCap, ModeTrusted, 5 * time.Second, 656 * time.Millisecond},       // (2000−22−666)/2
		{2 * time.Second, DefaultLeaseCap, ModeOrdinary, 5 * time.Second, 989 * time.Millisecond},      // (2000−22−0)/2
		{1200 * time.Second, DefaultLeaseCap, ModeTrusted, 5 * time.Second, 5 * time.Second},           // fits: unchanged
		{1200 * time.Second, DefaultLeaseCap, ModeTrusted, 0, 0},
	}
	for _, c := range cases {
		p := DefaultPolicy()
		p.LeaseCap = c.cap
		l, err := p.LeaseFor(c.budget, c.mode)
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.ClampGrace(c.grace)
		if err != nil || got != c.want {
			t.Errorf("%s %s lease %s, grace %s: got %s, %v; want %s", c.budget, c.mode, l.Lease, c.grace, got, err, c.want)
		}
	}
}

func TestClampGraceNoRoom(t *testing.T) {
	tooShort, err := DefaultPolicy().LeaseFor(time.Millisecond, ModeOrdinary)
	if err != nil {
		t.Fatal(err)
	}
	slow := Policy{LeaseCap: time.Second, RenewBound: time.Hour, RenewEvery: time.Second}
	renewLate, err := slow.LeaseFor(time.Minute, ModeTrusted)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lease    Lease
		late     bool
		sentence string
	}{
		{tooShort, false, "lease 1ms is not longer than its cancel margin 2.01ms (lease/100 + 2ms): it can never be proven held"},
		{renewLate, true, "renew-every 1s is not shorter than the lease 1s minus its cancel margin 12ms: the lease would end before it is renewed"},
	} {
		g, err := c.lease.ClampGrace(time.Second)
		var ne *NoGraceError
		if !errors.As(err, &ne) || g != 0 {
			t.Fatalf("lease %s every %s: %s, %v; want a *NoGraceError", c.lease.Lease, c.lease.RenewEvery, g, err)
		}
		if ne.RenewTooLate() != c.late || !strings.Contains(err.Error(), c.sentence) {
			t.Errorf("lease %s every %s: %v (renew too late %v), want %q (%v)", c.lease.Lease, c.lease.RenewEvery, err, ne.RenewTooLate(), c.sentence, c.late)
		}
	}
}

// A fixed lease ends with the budget, so the budget's stop comes cancel
// margin + grace before it; a renewed lease stops at the budget.
func TestBudgetStop(t *testing.T) {
	fixed, err := DefaultPolicy().LeaseFor(2*time.Second, ModeOrdinary)
	if err != nil {
		t.Fatal(err)
	}
	renewed, err := DefaultPolicy().LeaseFor(1200*time.Second, ModeTrusted)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fixed.BudgetStop(500*time.Millisecond), 1478*time.Millisecond; got != want { // 2000 − 22 − 500
		t.Errorf("fixed 2s lease, grace 500ms: stop after %s, want %s", got, want)
	}
	if got := renewed.BudgetStop(5 * time.Second); got != 1200*time.Second {
		t.Errorf("renewed lease, budget 1200s: stop after %s, want the budget", got)
	}
}
