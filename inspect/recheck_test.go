package inspect_test

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
)

// A 3s lease read in its last second just after another read (idle 0),
// then renewed as redlock's using() does when 500ms remain: the recheck
// sees the renewal, so no SUBSECOND_LEASE; a lease renewed to 600ms keeps it.
func TestRecheckSubsecondSeesTheRenewal(t *testing.T) {
	t.Parallel()
	c := client(t)
	cases := []struct {
		name  string
		renew time.Duration
		want  bool
	}{
		{"healthy", 3 * time.Second, false},
		{"subsecond", 600 * time.Millisecond, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := "t:" + redistest.Name(t)
			must(t, c.Set(ctx, k, "5f2b8c1d9e3a4b6c7d8e9f0a1b2c3d4e", 900*time.Millisecond).Err())
			must(t, c.Get(ctx, k).Err()) // a watch's read: idle 0 whatever the lease
			done := make(chan error, 1)
			go func() {
				time.Sleep(300 * time.Millisecond)
				done <- c.PExpire(ctx, k, tc.renew).Err()
			}()
			r := &inspect.Reader{RecheckSubsecond: true}
			locks, err := r.Read(ctx, c, []string{k})
			if err != nil {
				t.Fatal(err)
			}
			must(t, <-done)
			if got := hasFinding(locks[0], inspect.FindingSubsecondLease); got != tc.want {
				t.Errorf("renewed to %s: SUBSECOND_LEASE %v, want %v (findings %s)", tc.renew, got, tc.want, codes(locks[0]))
			}
		})
	}
}
