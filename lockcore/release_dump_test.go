package lockcore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
)

// ReleaseDump deletes a key that holds no lock string only while its DUMP
// is the one read: a TTL change alone does not stop it, new contents or
// another type do, and a gone key is ErrNotHeld.
func TestReleaseDump(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	lk := NewLocker(rdb)
	key := "t:" + redistest.Name(t) + ":hash"
	rdb.HSet(ctx, key, "3f1e:1", "1")
	dump := rdb.Dump(ctx, key).Val()

	rdb.HIncrBy(ctx, key, "3f1e:1", 1) // re-entered: other contents
	if err := lk.ReleaseDump(ctx, key, dump); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("changed hash: %v, want ErrNotHeld", err)
	}
	if rdb.Exists(ctx, key).Val() != 1 {
		t.Fatal("a changed hash was deleted")
	}
	rdb.Del(ctx, key)
	rdb.Set(ctx, key, "1:tok", 0)
	if err := lk.ReleaseDump(ctx, key, dump); !errors.Is(err, ErrNotHeld) || rdb.Exists(ctx, key).Val() != 1 {
		t.Fatalf("a string where the hash was: %v, want ErrNotHeld and the string kept", err)
	}

	rdb.Del(ctx, key)
	rdb.HSet(ctx, key, "3f1e:1", "1")
	rdb.PExpire(ctx, key, time.Minute) // a renewal: DUMP has no TTL
	if err := lk.ReleaseDump(ctx, key, dump); err != nil {
		t.Fatalf("same hash, renewed: %v", err)
	}
	if rdb.Exists(ctx, key).Val() != 0 {
		t.Fatal("the hash shown was not deleted")
	}
	if err := lk.ReleaseDump(ctx, key, dump); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("gone key: %v, want ErrNotHeld", err)
	}
}

// A DUMP the server refuses (an ACL without it) is an error, not ErrNotHeld,
// and deletes nothing.
func TestReleaseDumpDenied(t *testing.T) {
	ctx := context.Background()
	admin, rdb := clientWithout(t, "dump")
	key := "t:" + redistest.Name(t) + ":hash"
	admin.HSet(ctx, key, "f", "v")
	dump := admin.Dump(ctx, key).Val()
	if err := NewLocker(rdb).ReleaseDump(ctx, key, dump); err == nil || errors.Is(err, ErrNotHeld) {
		t.Errorf("release without DUMP: %v, want the ACL error", err)
	}
	if admin.Exists(ctx, key).Val() != 1 {
		t.Error("a refused DUMP deleted the key")
	}
}
