package cmd_test

import (
	"os/exec"
	"strings"
	"testing"

	// The tests' lockctl (this test binary) links the exporter, as
	// lockctl-exporter does; TestLockctlLinksNoPrometheus checks lockctl does not.
	_ "github.com/lockctl/lockctl/exporter/prom"
)

// TestLockctlLinksNoPrometheus: lockctl's packages leave out the Prometheus
// client and protobuf, whose inits would run on every command (PREAMBLE's
// start-up rule); lockctl-exporter links them.
func TestLockctlLinksNoPrometheus(t *testing.T) {
	t.Parallel()
	for pkg, want := range map[string]bool{"..": false, "../lockctl-exporter": true} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := string(out)
		if got := strings.Contains(deps, "github.com/prometheus/") || strings.Contains(deps, "google.golang.org/protobuf"); got != want {
			t.Errorf("go list -deps %s: Prometheus client or protobuf linked = %v, want %v", pkg, got, want)
		}
	}
}
