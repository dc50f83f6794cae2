package inspect

import (
	"slices"
	"testing"
)

// TestGlobIndex: the index lists, in the file's order, every built-in
// entry whose key glob matches a key, as trying them all does: keys with
// and without the globs' literal ends, "?" ends, one byte, none.
func TestGlobIndex(t *testing.T) {
	ds := builtinLayouts()
	keys := []string{"", "x", "lock:order-42", "bull:q:17:lock", "bull:q:active", "asynq:{q}:lease", "rq:wip:q",
		"{rw}:0d4a5d1e-1f43-4a5e-9cdb-3a2b1c9f8e7d:1:rwlock_timeout:2", "semaphore:s", "{s}:timeout", "Microi:{os}:Lease",
		"CSRedisClientLock:a", "rueidislock:0:n", "redisson_lock_queue:{n}", "a:fence", "lock:expire:x", "mutex:m"}
	for _, key := range keys {
		var all, indexed []int
		for i := range ds {
			if _, ok := globRuns(ds[i].keyParts, key, false); ok {
				all = append(all, i)
			}
		}
		for it := builtinIndex().entries(key); ; {
			i, ok := it.next()
			if !ok {
				break
			}
			if len(indexed) > 0 && i <= indexed[len(indexed)-1] {
				t.Fatalf("%q: index %d after %d: out of the file's order", key, i, indexed[len(indexed)-1])
			}
			if _, ok := globRuns(ds[i].keyParts, key, false); ok {
				indexed = append(indexed, i)
			}
		}
		if !slices.Equal(all, indexed) {
			t.Errorf("%q: the index gives entries %v, trying all gives %v", key, indexed, all)
		}
	}
	x := indexGlobs([]Declared{{keyParts: []string{"?a:", ""}}, {keyParts: []string{"", ":?"}}, {keyParts: []string{"b"}}})
	if !slices.Equal(x.anyKey, []int32{0, 1}) || !slices.Equal(x.prefix['b'], []int32{2}) {
		t.Errorf("globs ending in ?: any key %v, prefix b %v; want [0 1], [2]", x.anyKey, x.prefix['b'])
	}
}
