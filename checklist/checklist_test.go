package checklist

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kaptinlin/jsonschema"
	"github.com/lockctl/lockctl/internal/golden"
	"github.com/lockctl/lockctl/lockcore"
)

func loadSpec(t *testing.T, path string) *Spec {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSpec(path, data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

func specFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/specs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no specs: %v", err)
	}
	sort.Strings(files)
	return files
}

func evaluate(t *testing.T, opts Options, paths ...string) *Report {
	t.Helper()
	var specs []*Spec
	for _, p := range paths {
		specs = append(specs, loadSpec(t, p))
	}
	r, err := Evaluate(specs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func defaults() Options { return Options{Policy: lockcore.DefaultPolicy()} }

func item(t *testing.T, tr TaskReport, id string) Result {
	t.Helper()
	for _, it := range tr.Items {
		if it.ID == id {
			return it
		}
	}
	t.Fatalf("no item %s", id)
	return Result{}
}

// TestSpecs evaluates every testdata/specs/<item id>[.<variant>].<status>.yaml
// and checks that its item gets that status: each rule has a passing and a
// failing (or warning) spec.
func TestSpecs(t *testing.T) {
	covered := map[string]map[Status]bool{}
	for _, f := range specFiles(t) {
		parts := strings.Split(strings.TrimSuffix(filepath.Base(f), ".yaml"), ".")
		id, want := parts[0]+"."+parts[1], Status(parts[len(parts)-1])
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			r := evaluate(t, defaults(), f)
			got := item(t, r.Tasks[0], id)
			if got.Status != want {
				t.Errorf("%s: %s is %s (%s), want %s", f, id, got.Status, got.Reason, want)
			}
			if got.Line < 1 {
				t.Errorf("%s: %s has no spec line", f, id)
			}
		})
		if covered[id] == nil {
			covered[id] = map[Status]bool{}
		}
		covered[id][want] = true
	}
	for _, it := range Items() {
		if it.rule == nil {
			continue
		}
		c := covered[it.ID]
		if !c[StatusPass] || !(c[StatusFail] || c[StatusWarn]) {
			t.Errorf("rule %s needs a passing and a failing spec in testdata/specs, has %v", it.ID, c)
		}
	}
}

// TestCases turns shared/cases.md 1, 4, 6 and 10 into checks of the verdict,
// its reason and its spec line.
func TestCases(t *testing.T) {
	tests := []struct {
		name, file, id string
		status         Status
		reason         string
		line           int
	}{
		{"case1_constant_owner", "lock_key.owner-token.fail.yaml", "lock_key.owner-token", StatusFail, "constant owner token", 13},
		{"case4_renew_add", "lease.renew-sets.fail.yaml", "lease.renew-sets", StatusFail, "renew: add adds a lease to what is left", 13},
		{"case6_ordinary_45s_of_70s", "lease.matches-policy.fail.yaml", "lease.matches-policy", StatusFail, "ordinary lease 45s is shorter than its 1m10s budget", 11},
		{"case10_subsecond", "lease.units.warn.yaml", "lease.units", StatusWarn, "lease 120ms is under 1s", 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := evaluate(t, defaults(), filepath.Join("testdata/specs", tc.file))
			got := item(t, r.Tasks[0], tc.id)
			if got.Status != tc.status || !strings.Contains(got.Reason, tc.reason) || got.Line != tc.line {
				t.Errorf("%s = %s line %d %q; want %s line %d containing %q", tc.id, got.Status, got.Line, got.Reason, tc.status, tc.line, tc.reason)
			}
		})
	}
}

// TestPolicyThresholds: the thresholds come from the policy, so a lower cap
// turns the 60s lease into a failure and the default lease into 45s.
func TestPolicyThresholds(t *testing.T) {
	p := lockcore.DefaultPolicy()
	p.LeaseCap = 45 * time.Second
	r := evaluate(t, Options{Policy: p}, "testdata/specs/lease.matches-policy.pass.yaml", "testdata/specs/lease.renew-interval.pass.yaml")
	if got := item(t, r.Tasks[0], "lease.matches-policy"); got.Status != StatusFail || !strings.Contains(got.Reason, "above the 45s cap") {
		t.Errorf("cap 45s: %+v", got)
	}
	// 20s is above 45s/3 = 15s.
	if got := item(t, r.Tasks[1], "lease.renew-interval"); got.Status != StatusWarn || !strings.Contains(got.Reason, "of the 45s lease") {
		t.Errorf("cap 45s: %+v", got)
	}
	p = lockcore.DefaultPolicy()
	p.RenewEvery = 25 * time.Second
	r = evaluate(t, Options{Policy: p}, "testdata/specs/lease.renew-interval.policy-default.pass.yaml")
	if got := item(t, r.Tasks[0], "lease.renew-interval"); got.Status != StatusWarn || !strings.Contains(got.Reason, "renewed every 25s") {
		t.Errorf("renew-every 25s: %+v", got)
	}
}

func TestTemplatePasses(t *testing.T) {
	s, err := ParseSpec("template.yaml", Template())
	if err != nil {
		t.Fatal(err)
	}
	r, err := Evaluate([]*Spec{s}, defaults())
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary.Fail+r.Summary.Warn != 0 {
		t.Errorf("the init template should pass: %s\n%s", r.SummaryLine(), r.GitHub())
	}
}

func TestBlank(t *testing.T) {
	r := Blank()
	if len(r.Tasks[0].Items) != len(items) || r.Summary.Manual != len(items) {
		t.Fatalf("blank: %+v", r.Summary)
	}
	seen := map[string]bool{}
	last := 0
	for _, it := range r.Tasks[0].Items {
		if seen[it.ID] {
			t.Errorf("duplicate id %s", it.ID)
		}
		seen[it.ID] = true
		if !strings.HasPrefix(it.ID, it.Section+".") {
			t.Errorf("%s is not in section %s", it.ID, it.Section)
		}
		i := sectionIndex(it.Section)
		if i < last {
			t.Errorf("%s is out of the task's order", it.ID)
		}
		last = i
		if it.Question == "" || it.Why == "" || it.Verify == "" || it.Source == "" {
			t.Errorf("%s lacks question, why, verify or source", it.ID)
		}
	}
}

func sectionIndex(s string) int {
	for i, x := range Sections {
		if x == s {
			return i
		}
	}
	return -1
}

// TestInvalid: schema errors name file:line and the field.
func TestInvalid(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	sort.Strings(files)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseSpec(f, data)
			var se SpecErrors
			if !errors.As(err, &se) {
				t.Fatalf("want SpecErrors, got %v", err)
			}
			for _, e := range se {
				if e.Line < 1 || e.File != f {
					t.Errorf("error without location: %+v", e)
				}
			}
			golden.Assert(t, []byte(se.Error()+"\n"), "")
		})
	}
}

// TestFormats renders the evaluation of every spec under testdata/specs, and
// the checklist without a spec, in each format of the checklist package.
func TestFormats(t *testing.T) {
	reports := map[string]*Report{"specs": evaluate(t, defaults(), specFiles(t)...), "blank": Blank()}
	for name, r := range reports {
		t.Run(name, func(t *testing.T) {
			var js bytes.Buffer
			enc := json.NewEncoder(&js)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, js.Bytes(), ".json")
			golden.Assert(t, r.Markdown(), ".md")
			golden.Assert(t, r.GitHub(), ".github")
			ju, err := r.JUnit()
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, ju, ".xml")
			sa, err := r.SARIF("test")
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, sa, ".sarif")
		})
	}
}

func TestJUnitCounts(t *testing.T) {
	r := evaluate(t, defaults(), specFiles(t)...)
	out, err := r.JUnit()
	if err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	failures, cases := 0, 0
	for _, s := range got.Suites {
		for _, c := range s.Cases {
			cases++
			if c.Failure != nil {
				failures++
			}
		}
	}
	if failures != r.Summary.Fail || got.Failures != r.Summary.Fail || cases != len(r.Tasks)*len(items) {
		t.Errorf("junit: %d failures (attr %d), %d cases; summary %+v", failures, got.Failures, cases, r.Summary)
	}
}

// TestSARIFSchema validates the SARIF output against a hand-written schema of
// the SARIF 2.1.0 structure lockctl emits (testdata/sarif-2.1.0-minimal.schema.json),
// and against the official OASIS schema when LOCKCTL_SARIF_SCHEMA names a
// copy of sarif-schema-2.1.0.json (it is not vendored here).
func TestSARIFSchema(t *testing.T) {
	schemas := []string{"testdata/sarif-2.1.0-minimal.schema.json"}
	if p := os.Getenv("LOCKCTL_SARIF_SCHEMA"); p != "" {
		schemas = append(schemas, p)
	}
	r := evaluate(t, defaults(), specFiles(t)...)
	out, err := r.SARIF("test")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range schemas {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sch, err := jsonschema.NewCompiler().SetAssertFormat(true).Compile(raw)
		if err != nil {
			t.Fatal(err)
		}
		if res := sch.ValidateJSON(out); !res.IsValid() {
			t.Errorf("%s: %v", path, res.DetailedErrors())
		}
	}
	var log sarifLog
	if err := json.Unmarshal(out, &log); err != nil {
		t.Fatal(err)
	}
	if n := len(log.Runs[0].Results); n != r.Summary.Fail+r.Summary.Warn {
		t.Errorf("%d results, want fail+warn = %d", n, r.Summary.Fail+r.Summary.Warn)
	}
	for _, res := range log.Runs[0].Results {
		if log.Runs[0].Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID || res.Locations[0].PhysicalLocation.Region.StartLine < 1 {
			t.Errorf("result %+v", res)
		}
	}
}

// A spec path is a URI reference in SARIF: percent-encoded, and a colon in
// its first segment is not taken for a scheme.
func TestSpecURI(t *testing.T) {
	for path, want := range map[string]string{
		"tasks/order-import.yaml": "tasks/order-import.yaml",
		"w eird/p,a:y%.yaml":      "w%20eird/p,a:y%25.yaml",
		"a:b.yaml":                "./a:b.yaml",
		"/abs/x#1.yaml":           "/abs/x%231.yaml",
	} {
		if got := specURI(path); got != want {
			t.Errorf("specURI(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestGitHubEscapes(t *testing.T) {
	if got := ghProperty("a,b:c%\n"); got != "a%2Cb%3Ac%25%0A" {
		t.Errorf("ghProperty = %q", got)
	}
	if got := ghData("a,b:c%\r\n"); got != "a,b:c%25%0D%0A" {
		t.Errorf("ghData = %q", got)
	}
}

func TestSchemaIsJSON(t *testing.T) {
	var v map[string]any
	if err := json.Unmarshal(Schema(), &v); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseSpec("template.yaml", Template()); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseSpec: no input panics; a spec that parses evaluates, and every
// verdict has a line inside the file.
func FuzzParseSpec(f *testing.F) {
	for _, dir := range []string{"testdata/specs/*.yaml", "testdata/invalid/*.yaml"} {
		files, _ := filepath.Glob(dir)
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSpec("fuzz.yaml", data)
		if err != nil {
			var se SpecErrors
			if !errors.As(err, &se) || len(se) == 0 {
				t.Fatalf("error is not SpecErrors: %v", err)
			}
			return
		}
		r, err := Evaluate([]*Spec{s}, defaults())
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, it := range r.Tasks[0].Items {
			if it.Line < 1 || it.Line > lines {
				t.Fatalf("%s: line %d of %d", it.ID, it.Line, lines)
			}
		}
	})
}

// A line break in a task's name or spec path stays inside the one-line
// Markdown heading, written as \n.
func TestMarkdownHeadingOneLine(t *testing.T) {
	r := &Report{Tasks: []TaskReport{{Spec: "a\nb.yaml", Task: "evil\r\nname"}}}
	first, _, _ := strings.Cut(string(r.Markdown()), "\n")
	if want := "# Long-task review: evil\\r\\nname (`a\\nb.yaml`)"; first != want {
		t.Errorf("heading %q, want %q", first, want)
	}
}

// TestClusterSlotReasonNamesNoValue: the spec gives templates, not a value,
// so lock_key.cluster-slot names the keys with <value> and the part Redis
// hashes, never a made-up value or the slot it lands on.
func TestClusterSlotReasonNamesNoValue(t *testing.T) {
	for file, want := range map[string]string{
		"testdata/specs/lock_key.cluster-slot.fail.yaml": "lock key lock:OrderId:<value> hashes on lock:OrderId:<value>, fence key lock:OrderId:<value>:fence on lock:OrderId:<value>:fence: the two land on different slots; put the value in a hash tag, e.g. lock:{field}:{{{value}}}",
		"testdata/specs/lock_key.cluster-slot.pass.yaml": "lock key lock:OrderId:{<value>} and fence key lock:OrderId:{<value>}:fence both hash on <value>: one slot",
	} {
		got := item(t, evaluate(t, defaults(), file).Tasks[0], "lock_key.cluster-slot")
		if got.Reason != want || strings.Contains(got.Reason, "order-demo-001") || strings.Contains(got.Reason, "slot ") {
			t.Errorf("%s: reason %q, want %q", file, got.Reason, want)
		}
	}
}
