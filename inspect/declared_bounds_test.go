package inspect

import (
	"regexp"
	"testing"
)

// TestBoundsOf: the byte bounds of expressions of each kind.
func TestBoundsOf(t *testing.T) {
	for expr, want := range map[string]byteBounds{
		`(?P<fence>[0-9]{1,20}):(?P<owner>[0-9a-f]{32})`: {34, 53},
		`(?s).+`:               {1, -1},
		`(?s).*`:               {0, -1},
		`é{2}`:                 {4, 4},
		`(?i)k`:                {1, 4}, // K, k and the Kelvin sign (3 bytes)
		`a|bcd`:                {1, 3},
		`x?`:                   {0, 1},
		`[^a]`:                 {1, 4},
		`0|-?[1-9][0-9]{0,18}`: {1, 20},
		`ab*c`:                 {2, -1},
	} {
		if got := boundsOf(expr); got != want {
			t.Errorf("boundsOf(%q) = %+v, want %+v", expr, got, want)
		}
	}
}

// FuzzValueBounds: whatever an expression matches whole fits its bounds,
// so the bounds never turn a match away. Seeds: the built-in layouts'
// values with inputs they match.
func FuzzValueBounds(f *testing.F) {
	f.Add(`(?P<fence>[0-9]{1,20}):(?P<owner>[0-9a-f]{32})`, "34:0123456789abcdef0123456789abcdef")
	f.Add(`(?P<host>.+):(?P<pid>[0-9]+)|(?s).+`, "worker-3:9120")
	f.Add(`(?s).*[^\x20-\x7e].*`, "\x9c\x01\xfe\x7a\x00\x11\x83\x42\xd5\x6e\x0f\xb0\x27\xe1\x94\x58")
	f.Add(`(?i)ké`, "KÉ")
	f.Add(`(?i)k`, "\u212a")
	f.Add(`[^a]{2}`, "\xff\xfe")
	for _, d := range builtinLayouts() {
		if d.Value != "" {
			f.Add(d.Value, "")
		}
	}
	f.Fuzz(func(t *testing.T, expr, in string) {
		re, err := regexp.Compile(`^(?:` + expr + `)$`)
		if err != nil || !re.MatchString(in) {
			return
		}
		if b := boundsOf(expr); !b.fits(len(in)) {
			t.Errorf("%q matches %q (%d bytes) outside its bounds %+v", expr, in, len(in), b)
		}
	})
}
