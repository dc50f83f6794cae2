package conformance

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// library is one library the suite installs: its label (the case IDs'
// first part), the package that ships it and where the version comes from.
type library struct {
	Label, Package, Source string
}

// libraries maps each suite label to its package: "go" (this module's
// go.mod), "npm" (node/package-lock.json, by alias) or "deb" (dpkg).
var libraries = []library{
	{"redsync", "github.com/go-redsync/redsync/v4", "go"},
	{"redislock", "github.com/bsm/redislock", "go"},
	{"rueidislock", "github.com/redis/rueidis", "go"},
	{"go-zero", "github.com/zeromicro/go-zero", "go"},
	{"asynq", "github.com/hibiken/asynq", "go"},
	{"redlock4", "redlock4", "npm"},
	{"redlock5", "redlock5", "npm"},
	{"redis-semaphore", "redis-semaphore", "npm"},
	{"ioredis-lock", "@microfleet/ioredis-lock", "npm"},
	{"node-redis-warlock", "node-redis-warlock", "npm"},
	{"redis-lock", "redis-lock", "npm"},
	{"bull", "bull", "npm"},
	{"bullmq", "bullmq", "npm"},
	{"redis-py", "python3-redis", "deb"},
	{"rq", "python3-rq", "deb"},
	{"symfony", "php-symfony-lock", "deb"},
	{"laravel", "php-illuminate-cache", "deb"},
	{"malkusch", "php-malkusch-lock", "deb"},
}

// installedVersion returns the version the suite runs of lib ("4.18.1", no
// "v", no Debian revision), or "" when it cannot be read here.
func installedVersion(t *testing.T, lib library) string {
	switch lib.Source {
	case "go":
		mod, err := os.ReadFile("go.mod")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(lib.Package) + `\s+v(\S+)`).FindSubmatch(mod)
		if m == nil {
			t.Fatalf("go.mod does not require %s", lib.Package)
		}
		return string(m[1])
	case "npm":
		var lock struct {
			Packages map[string]struct {
				Version string `json:"version"`
			} `json:"packages"`
		}
		b, err := os.ReadFile("node/package-lock.json")
		if err == nil {
			err = json.Unmarshal(b, &lock)
		}
		if err != nil {
			t.Fatalf("node/package-lock.json: %v", err)
		}
		return strings.TrimPrefix(lock.Packages["node_modules/"+lib.Package].Version, "v")
	}
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", lib.Package).Output()
	if err != nil {
		return ""
	}
	// 2:5.4.53+dfsg-0+deb12u1 → 5.4.53
	v := string(out)
	if i := strings.Index(v, ":"); i >= 0 {
		v = v[i+1:]
	}
	return regexp.MustCompile(`^[0-9][0-9.]*`).FindString(v)
}

// TestDocsVerdicts checks docs/conformance.md's verdict table against the
// suite: one row per library with the version installed here, WRONG exactly
// when one of its cases is in knownFailures. Remove a known failure and this
// test asks for the verdict to be updated.
func TestDocsVerdicts(t *testing.T) {
	rows := tableRows(t, "../docs/conformance.md", "version")
	for _, lib := range libraries {
		row, ok := rows[lib.Label]
		if !ok {
			t.Errorf("docs/conformance.md: no verdict row for `%s`", lib.Label)
			continue
		}
		if v := installedVersion(t, lib); v != "" && !strings.Contains(row, v) {
			t.Errorf("docs/conformance.md: `%s` row does not give the version the suite ran, %s: %s", lib.Label, v, row)
		}
		wrong := false
		for id := range knownFailures {
			wrong = wrong || strings.HasPrefix(id, lib.Label+"/") || id == "bulk/"+lib.Label
		}
		if says := strings.Contains(row, "| WRONG |"); says != wrong {
			t.Errorf("docs/conformance.md: `%s` says WRONG=%v, but knownFailures lists a case of it: %v; update the verdict", lib.Label, says, wrong)
		}
	}
}

// TestLayoutsVersionVerified checks docs/layouts.md (generated from
// inspect.Layouts) against the suite: a row marked "run in CI" must name a
// layout the suite runs (or lockctl's own, run by the main tests) and give
// the version the suite installed.
func TestLayoutsVersionVerified(t *testing.T) {
	rows := tableRows(t, "../docs/layouts.md", "verified")
	if rows == nil {
		t.Fatal(`docs/layouts.md has no "verified" column: run go test ./inspect -run TestLayoutsDoc -update`)
	}
	ran := map[string]bool{"lockctl": true}
	for _, c := range cases {
		lib := libraries[slices.IndexFunc(libraries, func(l library) bool { return l.Label == libName(c.ID) })]
		v := installedVersion(t, lib)
		for _, name := range c.Layouts {
			if ran[name] {
				continue // checked with an earlier case of the library
			}
			ran[name] = true
			row, ok := rows[name]
			if ok && v != "" && strings.Contains(row, "run in CI") && !strings.Contains(row, v) {
				t.Errorf("docs/layouts.md: `%s` is run in CI at %s, but its row says: %s", name, v, row)
			}
		}
	}
	for name, row := range rows {
		if strings.Contains(row, "run in CI") && !ran[name] {
			t.Errorf("docs/layouts.md: `%s` says run in CI, but no conformance case runs it", name)
		}
	}
}

// tableRows returns the rows of the first Markdown table in path whose
// header row contains header (case-insensitive), keyed by the first cell's
// backquoted name; nil when there is no such table.
func tableRows(t *testing.T, path, header string) map[string]string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var rows map[string]string
	name := regexp.MustCompile("^\\|\\s*`([^`]+)`")
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case !strings.HasPrefix(line, "|"):
			if rows != nil && len(rows) > 0 {
				return rows
			}
		case rows == nil && strings.Contains(strings.ToLower(line), header):
			rows = map[string]string{}
		case rows != nil:
			if m := name.FindStringSubmatch(line); m != nil {
				rows[m[1]] = line
			}
		}
	}
	return rows
}
