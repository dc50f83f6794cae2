// Package golden compares rendered output with files under testdata/golden,
// named after the test; `go test ./... -update` rewrites them.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

// Updating reports whether -update was given (for helpers such as testscript's UpdateScripts).
func Updating() bool { return *update }

// Assert compares got with testdata/golden/<test name><suffix>.golden, or
// writes that file when -update is set.
func Assert(tb testing.TB, got []byte, suffix string) {
	tb.Helper()
	name := strings.ReplaceAll(tb.Name(), "/", "__") + suffix + ".golden"
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("golden file %s: %v (run go test -update to create it)", path, err)
	}
	if string(want) != string(got) {
		tb.Errorf("output differs from %s (go test -update rewrites it)\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}
