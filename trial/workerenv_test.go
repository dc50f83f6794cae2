package trial

import (
	"slices"
	"testing"
)

// A DATABASE_URL in lockctl's environment never reaches the workers
// without --store; with it, the scratch database's URL replaces it.
func TestWorkerEnvDatabaseURL(t *testing.T) {
	t.Parallel()
	base := []string{"PATH=/bin", "DATABASE_URL=postgres://app@prod/orders", "REDIS_URL=redis://prod:6379"}
	got := workerEnv(base, 2, 7, "redis://127.0.0.1:1234", "")
	want := []string{"PATH=/bin", "REDIS_URL=redis://127.0.0.1:1234", "LOCKCTL_TRIAL_WORKER=2", "LOCKCTL_TRIAL_SEED=7"}
	if !slices.Equal(got, want) {
		t.Errorf("without --store: %q, want %q", got, want)
	}
	got = workerEnv(base, 1, 7, "redis://127.0.0.1:1234", "sqlite:/tmp/x.db")
	if !slices.Contains(got, "DATABASE_URL=sqlite:/tmp/x.db") || slices.Contains(got, "DATABASE_URL=postgres://app@prod/orders") {
		t.Errorf("with --store: %q", got)
	}
}
