package inspect_test

import (
	"encoding/hex"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/lockctl/lockctl/inspect"
)

// FuzzAnalyze feeds the layout detector arbitrary types, values, hash fields
// and TTLs: it must not panic, must name a layout and a confidence, must give
// every finding a known severity, and its report must encode as JSON with a
// valid UTF-8 owner (raw bytes go to owner_hex) and a key_hex beside every
// key that is not UTF-8.
func FuzzAnalyze(f *testing.F) {
	f.Add("lock:OrderId:order-demo-001", "string", int64(41234), []byte("34:0123456789abcdef0123456789abcdef"), "", "", "34")
	f.Add("concurrent-test2", "hash", int64(30000), []byte(nil), "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1", "1", "")
	f.Add("horizon:lock:x", "string", int64(-1), []byte("1"), "", "", "")
	f.Add("job-lock:default:report", "string", int64(600000), []byte("ADDED:2026-11-29T12:00:01.006Z@worker-2"), "", "", "")
	f.Add("resource", "string", int64(-1), []byte("testNewValue"), "", "", "")
	f.Add("k\x00\xff", "list", int64(5), []byte{0xff, 0xfe, 0}, "mode", "write", "x")
	f.Add("{a}b", "zset", int64(-2), []byte(""), "", "", "-9")
	f.Add("Microi:{os}:DatabaseBackup:Lease", "string", int64(30000), []byte("42:01JD8ZQ3V7K2M9XW4T6R5B1C0N"), "", "", "")
	f.Add("fx:lock", "string", int64(20_000_000_000_000), []byte("eX2AsO3OEfGItFEzWRF//w=="), "", "", "")
	// Semaphores and shared locks (semaphore.go): redis-semaphore, Symfony Lock, Redisson.
	f.Add("semaphore:exports", "zset", int64(8000), []byte(nil), "6f1c2a3b-7d8e-4f90-a1b2-c3d4e5f60718_1", "1764641000000", "")
	f.Add("invoice-export", "zset", int64(300000), []byte(nil), "VOgTG+oPyiIt0ceFQmk11lT5LYrrF8Kaj6JQ5E2NdpM=", "1764641300000", "")
	f.Add("{sem}:timeout", "zset", int64(-1), []byte(nil), "\x00\xff3456789abcdef", "922337203685477", "2")
	f.Fuzz(func(t *testing.T, key, typ string, pttl int64, value []byte, field, fieldValue, fence string) {
		v := inspect.Value{Type: typ, PTTL: pttl, Bytes: value, Size: int64(len(value))}
		if field != "" {
			v.Fields = [][2]string{{field, fieldValue}}
			v.Items = []string{field, fieldValue}
		}
		comp := map[string]inspect.Value{}
		if fence != "" {
			comp["{"+key+"}:fence"] = inspect.Value{Type: "string", PTTL: -1, Bytes: []byte(fence)}
		}
		l := inspect.Analyze(key, v, comp, inspect.Options{ExpectOwner: value})
		if l.Layout.Name == "" || l.Layout.Confidence == "" {
			t.Fatalf("no layout for %q: %+v", key, l.Layout)
		}
		for _, fd := range l.Findings {
			switch fd.Severity {
			case "error", "warning", "info":
			default:
				t.Fatalf("finding %s has severity %q", fd.Code, fd.Severity)
			}
		}
		if !utf8.ValidString(l.Owner) {
			t.Fatalf("owner %q is not valid UTF-8", l.Owner)
		}
		if _, err := json.Marshal(l); err != nil {
			t.Fatalf("report does not encode: %v", err)
		}
		checkKeyHex(t, l.Key, l.KeyHex)
		for _, c := range l.Companions {
			checkKeyHex(t, c.Key, c.KeyHex)
		}
	})
}

// checkKeyHex fails unless keyHex is "" for a UTF-8 key and the key's exact
// bytes in hex otherwise.
func checkKeyHex(t *testing.T, key, keyHex string) {
	t.Helper()
	want := ""
	if !utf8.ValidString(key) {
		want = hex.EncodeToString([]byte(key))
	}
	if keyHex != want {
		t.Fatalf("key %q: key_hex %q, want %q", key, keyHex, want)
	}
}
