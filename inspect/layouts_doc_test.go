package inspect_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/golden"
)

// Markers around the generated table in docs/layouts.md.
const (
	layoutsBegin = "<!-- layouts table: generated from inspect.Layouts by TestLayoutsDoc; go test ./inspect -run TestLayoutsDoc -update -->"
	layoutsEnd   = "<!-- end of layouts table -->"
)

// layoutsTable renders inspect.Layouts as docs/layouts.md shows it.
func layoutsTable() string {
	var b strings.Builder
	b.WriteString("| layout | library | version | verified | key | value | TTL default | renewal | release check | fencing |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, l := range inspect.Layouts {
		cells := []string{"`" + l.Name + "`", l.Library, l.Version, l.Verified, l.Key, l.Value, l.TTL, l.Renewal, l.Release, l.Fencing}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// detectorNames returns the layout names the detector can give: the
// entries of builtin_layouts.yaml, and in its source setLayout("x"),
// setCandidates("x", "y"), companionOf's return "x", Role and the seen*
// lists of generic shapes' known writers (Layout.SeenIn).
func detectorNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	data, err := os.ReadFile("builtin_layouts.yaml")
	must(t, err)
	for _, m := range regexp.MustCompile(`(?m)^\s*- name: (\S+)$`).FindAllStringSubmatch(string(data), -1) {
		names[m[1]] = true
	}
	files, err := filepath.Glob("*.go")
	must(t, err)
	calls := regexp.MustCompile(`setLayout\("([^"]+)"|setCandidates\(("[^)]*)\)|return "([^"]+)", Role|seen\w+\s*=\s*\[\]string\{("[^}]*)\}`)
	quoted := regexp.MustCompile(`"([^"]+)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		must(t, err)
		for _, m := range calls.FindAllStringSubmatch(string(src), -1) {
			for _, n := range []string{m[1], m[3]} {
				if n != "" {
					names[n] = true
				}
			}
			for _, q := range quoted.FindAllStringSubmatch(m[2]+m[4], -1) {
				names[q[1]] = true
			}
		}
	}
	return names
}

// TestLayoutsDoc keeps docs/layouts.md's table, inspect.Layouts and the
// detector in step: every name the detector gives has a row, every row is
// a name it gives, and the table in the page is the one Layouts renders
// (-update rewrites it).
func TestLayoutsDoc(t *testing.T) {
	names := detectorNames(t)
	rows := map[string]bool{}
	for _, l := range inspect.Layouts {
		if rows[l.Name] {
			t.Errorf("layout %q has two rows", l.Name)
		}
		rows[l.Name] = true
		if !names[l.Name] {
			t.Errorf("layout %q has a row but the detector never names it", l.Name)
		}
		if l.Verified != inspect.RunInCI && !strings.HasPrefix(l.Verified, "from ") {
			t.Errorf("layout %q: verified %q is neither run in CI nor from source", l.Name, l.Verified)
		}
	}
	var missing []string
	for n := range names {
		if !rows[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("the detector names %v with no row in inspect.Layouts", missing)
	}
	path := filepath.Join("..", "docs", "layouts.md")
	doc, err := os.ReadFile(path)
	must(t, err)
	page := string(doc)
	i, j := strings.Index(page, layoutsBegin), strings.Index(page, layoutsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q and %q", path, layoutsBegin, layoutsEnd)
	}
	got, want := page[i+len(layoutsBegin)+1:j], layoutsTable()
	if got == want {
		return
	}
	if golden.Updating() {
		must(t, os.WriteFile(path, []byte(page[:i+len(layoutsBegin)+1]+want+page[j:]), 0o644))
		return
	}
	t.Errorf("%s's table is not inspect.Layouts (go test ./inspect -run TestLayoutsDoc -update rewrites it)\n--- page\n%s--- Layouts\n%s", path, got, want)
}
