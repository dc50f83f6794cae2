package diagnose

import (
	"context"
	"testing"

	"github.com/lockctl/lockctl/inspect"
)

// TestVerdicts: the old holder's fence against the lease's and the
// store's, and what exits 1.
func TestVerdicts(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name         string
		fence, store *int64
		leaseFence   *int64
		noStore      bool
		verdict      string
		stale        *bool
		unsafe       bool
		unsafeStrict bool
	}{
		{"newer fence in the store", n(34), n(35), n(35), false, Refused, ptr(true), false, false},
		{"store not newer", n(34), n(34), n(35), false, Accepted, ptr(true), true, true},
		{"store empty, no lease", n(34), nil, nil, false, Accepted, ptr(true), true, true},
		{"no store", n(34), nil, n(35), true, Unknown, ptr(true), false, true},
		{"current holder", n(35), n(35), n(35), false, Accepted, ptr(false), false, false},
		{"no fence", nil, n(35), n(35), false, Unknown, nil, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := Options{Fence: c.fence}
			if !c.noStore {
				opts.NewestFence = func(context.Context) (*int64, error) { return c.store, nil }
			}
			rep := Report{Key: "k"}
			if c.leaseFence != nil {
				rep.Lease.Exists = true
				rep.Lease.Fence = &inspect.Fence{Value: c.leaseFence}
			}
			rep.Boundary = boundary(opts, &rep)
			if opts.NewestFence != nil {
				if err := judge(context.Background(), opts, &rep.Boundary); err != nil {
					t.Fatal(err)
				}
			}
			b := rep.Boundary
			if b.Verdict != c.verdict || fmtBool(b.Stale) != fmtBool(c.stale) {
				t.Errorf("verdict %s stale %s, want %s %s (%s)", b.Verdict, fmtBool(b.Stale), c.verdict, fmtBool(c.stale), b.Reason)
			}
			if rep.Unsafe(false) != c.unsafe || rep.Unsafe(true) != c.unsafeStrict {
				t.Errorf("Unsafe = %v, with --fail-on unknown %v; want %v, %v", rep.Unsafe(false), rep.Unsafe(true), c.unsafe, c.unsafeStrict)
			}
			if advice(&rep) == "" {
				t.Error("no advice")
			}
		})
	}
}

func fmtBool(b *bool) string {
	if b == nil {
		return "null"
	}
	if *b {
		return "true"
	}
	return "false"
}
