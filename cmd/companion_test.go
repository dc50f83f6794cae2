package cmd_test

import (
	"os/exec"
	"strings"
	"testing"

	// The tests' lockctl (this test binary) links the exporter and the SQL
	// store, as lockctl-exporter and lockctl-store do;
	// TestLockctlLinksNoCompanionDeps checks that lockctl does not.
	_ "github.com/lockctl/lockctl/exporter/prom"
	_ "github.com/lockctl/lockctl/trial/store"
)

// TestLockctlLinksNoCompanionDeps: lockctl's packages leave out the
// Prometheus client and protobuf, the SQL drivers and blackfriday, whose
// package inits would run on every command (issue 42, start-up within 3x a
// Go hello world); each companion links its own, and only that.
func TestLockctlLinksNoCompanionDeps(t *testing.T) {
	t.Parallel()
	heavy := map[string][]string{
		"prometheus":  {"github.com/prometheus/", "google.golang.org/protobuf"},
		"sql drivers": {"github.com/jackc/pgx/", "github.com/go-sql-driver/mysql", "modernc.org/sqlite"},
		"markdown":    {"github.com/russross/blackfriday"},
	}
	for pkg, own := range map[string]string{"..": "", "../lockctl-exporter": "prometheus", "../lockctl-store": "sql drivers", "../internal/gendocs": "markdown"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for name, prefixes := range heavy {
			linked := false
			for _, p := range prefixes {
				linked = linked || strings.Contains(string(out), "\n"+p)
			}
			if linked != (name == own) {
				t.Errorf("go list -deps %s: %s linked = %v, want %v", pkg, name, linked, name == own)
			}
		}
	}
}
