package lockcore

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// Seeds beyond these live in testdata/fuzz/<FuzzName>/ (crashers found by
// `go test -fuzz` are added there and then always run as regression cases).

// FuzzParseDuration: never panics; an accepted duration survives
// FormatDuration and back; an error names the value it refuses.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"1200s", "13h", "1h30m", "500ms", "1200", "-5s", "0s", "", " ", "soon", "9999999999999h", "1.5µs", "3e2", "+7m", "0x10", "NaN", "inf", "1s2", ".5s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			if strings.TrimSpace(s) != "" && !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("error %q does not name the value %q", err, s)
			}
			// A suggested value is one that parses (up to its range).
			if _, hint, ok := strings.Cut(err.Error(), "did you mean "); ok {
				hint, _, _ = strings.Cut(hint, "?")
				if _, herr := ParseDuration(hint); herr != nil && !strings.Contains(herr.Error(), "too large") {
					t.Fatalf("%q: the hint %q does not parse: %v", s, hint, herr)
				}
			}
			if _, perr := ParsePositiveDuration(s); perr == nil {
				t.Fatalf("ParsePositiveDuration accepts %q that ParseDuration refuses", s)
			}
			return
		}
		back, err := ParseDuration(FormatDuration(d))
		if err != nil || back != d {
			t.Fatalf("%q = %v; FormatDuration gives %q which parses to %v, %v", s, d, FormatDuration(d), back, err)
		}
		p, perr := ParsePositiveDuration(s)
		if (perr == nil) != (d > 0) || (perr == nil && p != d) {
			t.Fatalf("ParsePositiveDuration(%q) = %v, %v; ParseDuration gave %v", s, p, perr, d)
		}
	})
}

// FuzzTemplate: ParseTemplate never panics, keeps the source, and a template
// without placeholders expands to its text with doubled braces undoubled.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"lock:{field}:{value}", "lock:{field}:{{{value}}}", "{key}:fence", "{{", "}}", "{", "}", "{}", "{{}}", "{nope}", "a{value", "x}}y{{z", "{{{value}}}{{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		tp, err := ParseTemplate(src, "", "field", "value", "key")
		if err != nil {
			if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), strconv.Quote(src)) {
				t.Fatalf("error %q does not wrap ErrTemplate naming %q", err, src)
			}
			return
		}
		if tp.String() != src {
			t.Fatalf("String() = %q, want %q", tp.String(), src)
		}
		if _, fixed := tp.Fixed(); fixed {
			want := strings.NewReplacer("{{", "{", "}}", "}").Replace(src)
			if got := tp.Expand(nil); got != want {
				t.Fatalf("literal template %q expands to %q, want %q", src, got, want)
			}
		}
	})
}

// FuzzKeySpec: NewKeySpec and Keys never panic; every error wraps
// ErrTemplate; a spec accepted for a cluster is accepted outside one, and it
// keeps the lock and fence keys of any non-empty value without braces on
// one slot (a value with braces changes the key's hash tag, see
// KeySpec.Keys).
func FuzzKeySpec(f *testing.F) {
	f.Add("OrderId", "lock:{field}:{value}", "", "order-demo-001")
	f.Add("OrderId", "lock:{field}:{{{value}}}", "", "order-demo-001")
	f.Add("OrderId", "lock:{field}:{{{value}}}", "fence:{{{value}}}", "42")
	f.Add("OrderId", "lock:{field}:{value}", "fence:{value}", "42")
	f.Add("", "", "{key}:fence", "x")
	f.Add("a}b", "{{{field}}}{value}", "{{{field}}}:{value}", "v")
	f.Add("Id", "x{{{value}", "{{{key}}}", "v")
	f.Fuzz(func(t *testing.T, field, keyTmpl, fenceTmpl, value string) {
		ks, err := NewKeySpec(field, keyTmpl, fenceTmpl, true)
		if err != nil {
			if !errors.Is(err, ErrTemplate) {
				t.Fatalf("error %v does not wrap ErrTemplate", err)
			}
			return
		}
		if _, err := NewKeySpec(field, keyTmpl, fenceTmpl, false); err != nil {
			t.Fatalf("accepted for a cluster but not outside one: %v", err)
		}
		k := ks.Keys(value)
		if k != ks.Keys(value) {
			t.Fatal("Keys is not deterministic")
		}
		if value != "" && !strings.ContainsAny(value, "{}") && Slot(k.Lock) != Slot(k.Fence) {
			t.Fatalf("cluster spec (%q, %q, %q) puts value %q on slots %d (%q) and %d (%q)", field, keyTmpl, fenceTmpl, value, Slot(k.Lock), k.Lock, Slot(k.Fence), k.Fence)
		}
	})
}
