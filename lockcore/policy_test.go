package lockcore

import (
	"strings"
	"testing"
	"time"
)

func TestLeaseForPinnedRows(t *testing.T) {
	p := DefaultPolicy()
	cases := []struct {
		budget    time.Duration
		mode      Mode
		lease     time.Duration
		renewable bool
		bound     time.Duration
	}{
		{30 * time.Second, ModeTrusted, 30 * time.Second, true, 12 * time.Hour},
		{60 * time.Second, ModeTrusted, 60 * time.Second, true, 12 * time.Hour},
		{1200 * time.Second, ModeTrusted, 60 * time.Second, true, 12 * time.Hour},
		{3600 * time.Second, ModeTrusted, 60 * time.Second, true, 12 * time.Hour},
		{13 * time.Hour, ModeTrusted, 60 * time.Second, true, 13 * time.Hour},
		{1200 * time.Second, ModeOrdinary, 1200 * time.Second, false, 0},
		{30 * time.Second, ModeOrdinary, 30 * time.Second, false, 0},
		{70 * time.Second, ModeOrdinary, 70 * time.Second, false, 0}, // cases.md 6
	}
	for _, c := range cases {
		l, err := p.LeaseFor(c.budget, c.mode)
		if err != nil {
			t.Fatalf("%s %s: %v", c.budget, c.mode, err)
		}
		if l.Lease != c.lease || l.Renewable != c.renewable || l.RenewBound != c.bound {
			t.Errorf("%s %s: got lease %s renewable %v bound %s, want %s %v %s", c.budget, c.mode, l.Lease, l.Renewable, l.RenewBound, c.lease, c.renewable, c.bound)
		}
		if l.TakeoverWait != l.Lease {
			t.Errorf("%s %s: takeover wait %s, want one lease", c.budget, c.mode, l.TakeoverWait)
		}
	}
}

func TestLeaseDerivedFigures(t *testing.T) {
	l, err := DefaultPolicy().LeaseFor(1200*time.Second, ModeTrusted)
	if err != nil {
		t.Fatal(err)
	}
	if l.RenewEvery != 20*time.Second {
		t.Errorf("renew every %s, want 20s (lease/3)", l.RenewEvery)
	}
	if l.Renewals != 57 { // (1200-60)/20
		t.Errorf("renewals %d, want 57", l.Renewals)
	}
	if l.CancelMargin != 602*time.Millisecond {
		t.Errorf("cancel margin %s, want 602ms", l.CancelMargin)
	}
	if !hasWarning(l, WarnCheckpoint) {
		t.Errorf("1200s budget: want %s, got %v", WarnCheckpoint, l.Warnings)
	}
	// cases.md 6: the trusted lease for a 70 s budget is 60 s renewed every 20 s.
	l, _ = DefaultPolicy().LeaseFor(70*time.Second, ModeTrusted)
	if l.Lease != 60*time.Second || l.RenewEvery != 20*time.Second || l.RenewBound != 12*time.Hour {
		t.Errorf("70s trusted: %+v", l)
	}
	// lease/3 in whole milliseconds: 1s renews every 333ms, 10s every 3.333s.
	for lease, want := range map[time.Duration]time.Duration{time.Second: 333 * time.Millisecond, 10 * time.Second: 3333 * time.Millisecond, 2 * time.Millisecond: time.Millisecond} {
		l, _ = DefaultPolicy().LeaseFor(lease, ModeTrusted)
		if l.RenewEvery != want {
			t.Errorf("%s trusted: renew every %s, want %s", lease, l.RenewEvery, want)
		}
	}
}

func TestLeaseWarnings(t *testing.T) {
	p := DefaultPolicy()
	l, _ := p.LeaseFor(1200*time.Second, ModeOrdinary)
	if !hasWarning(l, WarnCrashBlocks) || !hasWarning(l, WarnCheckpoint) {
		t.Errorf("ordinary 1200s: %v", l.Warnings)
	}
	l, _ = p.LeaseFor(120*time.Millisecond, ModeOrdinary) // cases.md 10
	if !hasWarning(l, WarnSubsecond) {
		t.Errorf("120ms: %v", l.Warnings)
	}
	p.RenewEvery = 30 * time.Second
	l, _ = p.LeaseFor(1200*time.Second, ModeTrusted)
	if !hasWarning(l, WarnRenewTooSlow) {
		t.Errorf("renew 30s of 60s: %v", l.Warnings)
	}
	p.RenewEvery = 90 * time.Second
	l, _ = p.LeaseFor(1200*time.Second, ModeTrusted)
	if !hasWarning(l, WarnRenewNotNeeded) {
		t.Errorf("renew 90s of 60s: %v", l.Warnings)
	}
	// Within the cancel margin (602ms of 60s) the lease cannot be proven
	// held at the renewal either: run refuses it, checklist fails it.
	p.RenewEvery = 59500 * time.Millisecond
	l, _ = p.LeaseFor(1200*time.Second, ModeTrusted)
	if !hasWarning(l, WarnRenewNotNeeded) {
		t.Errorf("renew 59.5s of 60s: %v", l.Warnings)
	}
	l, _ = DefaultPolicy().LeaseFor(30*time.Second, ModeTrusted)
	if len(l.Warnings) != 0 {
		t.Errorf("30s trusted: want no warnings, got %v", l.Warnings)
	}
}

func TestLeaseForRejects(t *testing.T) {
	p := DefaultPolicy()
	if _, err := p.LeaseFor(0, ModeTrusted); err == nil {
		t.Error("zero budget accepted")
	}
	if _, err := p.LeaseFor(time.Second, Mode("sometimes")); err == nil {
		t.Error("unknown mode accepted")
	}
	p.LeaseCap = 0
	if _, err := p.LeaseFor(time.Second, ModeTrusted); err == nil {
		t.Error("zero cap accepted")
	}
}

func hasWarning(l Lease, code string) bool {
	for _, w := range l.Warnings {
		if w.Code == code {
			return true
		}
	}
	return false
}

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{"1200s": 1200 * time.Second, "13h": 13 * time.Hour, "500ms": 500 * time.Millisecond, " 1h30m ": 90 * time.Minute}
	for in, want := range good {
		if d, err := ParseDuration(in); err != nil || d != want {
			t.Errorf("%q: %s %v, want %s", in, d, err, want)
		}
	}
	bad := map[string]string{
		"1200":                    `"1200" has no unit; did you mean 1200s?`,
		"":                        "duration is empty",
		"soon":                    `"soon" is not a duration`,
		"99999999999h":            `"99999999999h" is too large; durations go up to 2562047h`,
		"2562048h":                `"2562048h" is too large`,
		"1h99999999999999999999m": `is too large`,
		"12 parsecs":              `"12 parsecs" is not a duration`,
		"100ns":                   `"100ns" uses a unit below a millisecond`,
		"1000us":                  `"1000us" uses a unit below a millisecond`,
		"2µs":                     `uses a unit below a millisecond`,
		"1.5ms":                   `"1.5ms" is not a whole number of milliseconds`,
		"1.0005s":                 `is not a whole number of milliseconds`,
		"-5s":                     "",
		// Numbers strconv takes that are no bare decimal: no hint that would not parse.
		"NaN":   `"NaN" is not a duration`,
		"Inf":   `"Inf" is not a duration`,
		"1e3":   `"1e3" is not a duration`,
		"0x1p4": `"0x1p4" is not a duration`,
		"1.5":   `"1.5" has no unit; did you mean 1.5s?`,
		// Its hint would not be whole milliseconds either (fuzz seed hint_not_whole_ms).
		"100000.0001": `"100000.0001" has no unit; use a number with a unit such as 30s`,
		"0s":          "",
		// A bare number that no unit would make positive: no hint.
		"0":  `"0" must be positive, with a unit such as 30s`,
		"-5": `"-5" must be positive`,
	}
	for in, want := range bad {
		_, err := ParsePositiveDuration(in)
		if err == nil {
			t.Errorf("%q accepted", in)
			continue
		}
		if want != "" && !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
