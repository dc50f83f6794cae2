package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/trial/store"
)

// TestBoundaryNewestFence reads the newest fence from a real database of
// each family, refuses what is not one reading one-column query, and
// leaves the rows as they were.
func TestBoundaryNewestFence(t *testing.T) {
	t.Parallel()
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t, srv)
			if err := s.ApplySchema(ctx, "CREATE TABLE writes (resource VARCHAR(40), fence BIGINT);\nCREATE TABLE empty_t (fence BIGINT);\nINSERT INTO writes VALUES ('order-1', 34), ('order-1', 35), ('order-2', 99);"); err != nil {
				t.Fatal(err)
			}
			b, err := store.OpenBoundary(ctx, s.URL())
			if err != nil {
				t.Fatalf("OpenBoundary: %v", err)
			}
			defer b.Close()
			got, err := b.NewestFence(ctx, "-- the boundary\nSELECT max(fence) FROM writes WHERE resource = 'order-1'")
			if err != nil || got == nil || *got != 35 {
				t.Fatalf("NewestFence = %v, %v; want 35", got, err)
			}
			if got, err := b.NewestFence(ctx, "SELECT fence FROM writes"); err != nil || got == nil || *got != 99 {
				t.Errorf("several rows: %v, %v; want the highest, 99", got, err)
			}
			for _, q := range []string{"SELECT max(fence) FROM empty_t", "SELECT fence FROM empty_t"} {
				if got, err := b.NewestFence(ctx, q); err != nil || got != nil {
					t.Errorf("%s = %v, %v; want nil: no fence accepted yet", q, got, err)
				}
			}
			for q, want := range map[string]string{
				"SELECT resource, fence FROM writes":         "returns 2 columns (resource, fence)",
				"SELECT 1; SELECT 2":                         "has 2 statements",
				"UPDATE writes SET fence = 0":                "must only read",
				"SELECT resource FROM writes":                "is not an integer fence",
				"SELECT max(fence) FROM no_such_table":       "the fence query",
				"-- nothing but a comment":                   "no statement",
				"DELETE FROM writes WHERE resource = 'none'": "must only read",
			} {
				_, err := b.NewestFence(ctx, q)
				if !errors.Is(err, store.ErrInput) || !strings.Contains(err.Error(), want) {
					t.Errorf("%q: %v; want ErrInput saying %q", q, err, want)
				}
			}
			if got, err := b.NewestFence(ctx, "SELECT count(*) FROM writes"); err != nil || *got != 3 {
				t.Errorf("rows after the refused queries: %v, %v; want 3 untouched", got, err)
			}
		})
	}
}

// TestBoundaryBadInput: the scheme, a missing SQLite file and an
// unreachable server.
func TestBoundaryBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	missing := filepath.Join(t.TempDir(), "nope.db")
	for raw, want := range map[string]string{
		"redis://127.0.0.1:6379/0": `store scheme "redis" is not supported; accepted: postgres://`,
		"no-scheme":                "has no scheme",
		"sqlite:" + missing:        "does not exist",
		"sqlite:" + t.TempDir():    "is a directory",
		"postgres:///db":           "names no host",
	} {
		_, err := store.OpenBoundary(ctx, raw)
		if !errors.Is(err, store.ErrInput) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want ErrInput saying %q", raw, err, want)
		}
	}
	_, err := store.OpenBoundary(ctx, "postgres://u:s3cret@127.0.0.1:1/db?connect_timeout=2")
	if err == nil || errors.Is(err, store.ErrInput) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("unreachable: %v; want a connection error without the password", err)
	}
}
