package lockcore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
)

// TestClusterLocker runs acquire, renew and release on a real 3-primary
// cluster: the default templates put the lock and its fence counter on one
// slot, so the scripts run there; keys on two slots are refused by the
// server with CROSSSLOT, and NewKeySpec refuses such templates up front.
func TestClusterLocker(t *testing.T) {
	ctx := context.Background()
	c := redistest.StartCluster(t, 3)
	rdb := c.Client(t)
	lk := NewLocker(rdb)

	t.Run("default templates", func(t *testing.T) {
		ks, err := NewKeySpec("OrderId", "", "", true)
		if err != nil {
			t.Fatal(err)
		}
		// Values spread over the three primaries.
		for _, v := range []string{"order-demo-001", "order-demo-002", "order-demo-003", "x"} {
			keys := ks.Keys(v)
			if Slot(keys.Lock) != Slot(keys.Fence) {
				t.Fatalf("%+v on slots %d and %d", keys, Slot(keys.Lock), Slot(keys.Fence))
			}
			a, err := lk.Acquire(ctx, keys, 10*time.Second)
			if err != nil {
				t.Fatalf("acquire %+v: %v", keys, err)
			}
			if _, err := lk.Acquire(ctx, keys, 10*time.Second); !errors.Is(err, ErrNotObtained) {
				t.Fatalf("second acquire of %s: %v", keys.Lock, err)
			}
			if err := a.Renew(ctx); err != nil {
				t.Fatalf("renew: %v", err)
			}
			if got := rdb.Get(ctx, keys.Lock).Val(); got != a.Value() {
				t.Fatalf("lock value %q, want %q", got, a.Value())
			}
			if err := a.Release(ctx); err != nil {
				t.Fatalf("release: %v", err)
			}
			b, err := lk.Acquire(ctx, keys, 10*time.Second)
			if err != nil || b.Fence != a.Fence+1 {
				t.Fatalf("re-acquire: fence %v after %d, %v", b, a.Fence, err)
			}
			if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("old holder's release: %v", err)
			}
			if err := b.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("hash tag template", func(t *testing.T) {
		ks, err := NewKeySpec("OrderId", "lock:{field}:{{{value}}}", "fence:{{{value}}}", true)
		if err != nil {
			t.Fatal(err)
		}
		keys := ks.Keys("order-demo-001")
		a, err := lk.Acquire(ctx, keys, 5*time.Second)
		if err != nil {
			t.Fatalf("acquire %+v: %v", keys, err)
		}
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("cross-slot template refused", func(t *testing.T) {
		_, err := NewKeySpec("OrderId", "lock:{field}:{value}", "fence:{value}", true)
		lock, fence := "lock:OrderId:probe-value", "fence:probe-value"
		want := fmt.Sprintf("(slot %d) and fence key %q (slot %d)", Slot(lock), fence, Slot(fence))
		if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want an error naming %s", err, want)
		}
		// Outside a cluster the same template is fine.
		if _, err := NewKeySpec("OrderId", "lock:{field}:{value}", "fence:{value}", false); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("cross-slot script call fails", func(t *testing.T) {
		keys := Keys{Lock: "t:crossslot:lock", Fence: "t:crossslot:fence"}
		if Slot(keys.Lock) == Slot(keys.Fence) {
			t.Fatal("test keys share a slot")
		}
		_, err := lk.Acquire(ctx, keys, 5*time.Second)
		if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
			t.Fatalf("acquire across slots: %v, want CROSSSLOT", err)
		}
		for _, k := range []string{keys.Lock, keys.Fence} {
			if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 0 {
				t.Fatalf("after a refused acquire EXISTS %s = %d, %v", k, n, err)
			}
		}
	})
}
