package lockcore

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ParseDuration parses a Go duration ("1200s", "1h30m", "500ms") in whole
// milliseconds, and rejects a bare number, whose unit would be a guess (case
// 10 of shared/cases.md: milliseconds given as seconds), and units below ms
// (ns, us, µs). Errors name the value and what is accepted;
// the sign is not checked here (see ParsePositiveDuration).
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("duration is empty; use a number with a unit such as 30s, 20m, 13h")
	}
	// A bare decimal number gets its likely unit suggested; other numbers
	// strconv takes (NaN, Inf, 1e3, 0x1p4) would get a hint that does not parse.
	if _, err := strconv.ParseFloat(t, 64); err == nil && durationSyntax().MatchString(t+"s") {
		if _, herr := ParseDuration(t + "s"); herr != nil { // 0.0001: not whole ms as seconds either
			return 0, fmt.Errorf("%q has no unit; use a number with a unit such as 30s, 1500ms, 20m, 13h", s)
		}
		return 0, fmt.Errorf("%q has no unit; did you mean %ss? (units: ms, s, m, h)", s, t)
	}
	d, err := time.ParseDuration(t)
	switch {
	case err != nil && durationSyntax().MatchString(t):
		return 0, fmt.Errorf("%q is too large; durations go up to 2562047h (about 292 years)", s)
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration; use a number with a unit such as 30s, 1500ms, 20m, 13h", s)
	case subMillisecond().MatchString(t):
		return 0, fmt.Errorf("%q uses a unit below a millisecond; lockctl's times are whole milliseconds (units: ms, s, m, h)", s)
	case d%time.Millisecond != 0:
		return 0, fmt.Errorf("%q is not a whole number of milliseconds (Redis takes leases in ms: PX); units: ms, s, m, h", s)
	}
	return d, nil
}

// subMillisecond matches the units time.ParseDuration takes below ms;
// compiled on first use, not in every lockctl start (issue 42).
var subMillisecond = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\d(ns|us|µs|μs)`) })

// durationSyntax is time.ParseDuration's grammar: what matches it and still
// fails to parse is out of range (over 2^63-1 ns). Compiled on first use.
var durationSyntax = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$`)
})

// ParsePositiveDuration is ParseDuration that also rejects zero and negative values.
func ParsePositiveDuration(s string) (time.Duration, error) {
	// A bare 0 or negative number: "did you mean 0s?" would suggest a value
	// refused here too.
	t := strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(t, 64); err == nil && f <= 0 && durationSyntax().MatchString(t+"s") {
		return 0, fmt.Errorf("%q must be positive, with a unit such as 30s, 1500ms, 20m, 13h", s)
	}
	d, err := ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be positive", s)
	}
	return d, nil
}

// FormatDuration prints a duration the way people write one: 1200s as "20m",
// 13h as "13h", 602ms as "602ms", 90s as "1m30s" (Go's notation without
// zero units).
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Second && d > -time.Second:
		if d%time.Millisecond != 0 {
			return d.String()
		}
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d%time.Second != 0:
		return d.String()
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
