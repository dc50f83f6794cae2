package cmd_test

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
)

// TestInspectSeedPlatform: the seed platform (Microi) keeps "<fence>:<ULID>"
// at "…:Lease" and its INCR counter at the sibling "…:FencingToken" (issue
// 20); inspect gives fence value and counter with no finding, by its
// built-in sibling rule, by a suffix fence template and by a fixed one, and
// a counter met on its own is a counter.
func TestInspectSeedPlatform(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	url := s.URL()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Set(bg, "Microi:{os}:DatabaseBackup:Lease", "42:01JD8ZQ3V7K2M9XW4T6R5B1C0N", 30*time.Second).Err())
	must(c.Set(bg, "Microi:{os}:DatabaseBackup:FencingToken", 42, 0).Err())
	must(c.Set(bg, "Plat:{os}:Job", "7:9f1c2d3e4b5a69788796a5b4c3d2e1f0", 30*time.Second).Err())
	must(c.Set(bg, "Plat:{os}:JobCounter", 7, 0).Err())
	lease, counter := "Microi:{os}:DatabaseBackup:Lease", "Microi:{os}:DatabaseBackup:FencingToken"
	cases := []struct {
		name   string
		args   []string
		layout string
		locks  float64
	}{
		{"built-in sibling", []string{"inspect", "--key", lease, "--key", counter}, "microi", 1},
		{"suffix template", []string{"inspect", "--key", lease, "--key", counter, "--fence-template", "{key%:Lease}:FencingToken"}, "microi", 1},
		{"fixed template", []string{"inspect", "--key", lease, "--key", counter, "--fence-template", "Microi:{{os}}:DatabaseBackup:FencingToken"}, "microi", 1},
		{"scan with the suffix template", []string{"inspect", "--pattern", "Microi:*", "--fence-template", "{key%:Lease}:FencingToken"}, "microi", 1},
		{"fixed template, own counter name", []string{"inspect", "--pattern", "Plat:*", "--fence-template", "Plat:{{os}}:JobCounter"}, "lockctl", 1},
	}
	for _, tc := range cases {
		code, out, errOut := run(t, append(tc.args, "--fail-on", "warning", "-o", "json", "--redis", url)...)
		if code != 0 {
			t.Errorf("%s: exit %d, want 0 (no finding)\n%s%s", tc.name, code, out, errOut)
			continue
		}
		rep := decodeReport(t, out)
		sum := rep["summary"].(map[string]any)
		if sum["locks"] != tc.locks || sum["companions"] != 1.0 || len(sum["by_finding"].(map[string]any)) != 0 {
			t.Errorf("%s: summary %v", tc.name, sum)
		}
		for _, l := range rep["locks"].([]any) {
			lk := l.(map[string]any)
			if lk["role"] != nil {
				continue
			}
			fence, _ := lk["fence"].(map[string]any)
			if layout := lk["layout"].(map[string]any); layout["name"] != tc.layout || layout["confidence"] != "certain" || fence == nil || fence["value"] != fence["counter"] {
				t.Errorf("%s: layout %v fence %v", tc.name, layout, fence)
			}
		}
	}
}
