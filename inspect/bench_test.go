package inspect_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/lockcore"
)

// BenchmarkAnalyze measures the pure detector on the layouts a scan meets
// most: a lockctl lock with its fence counter, a redsync token, a Redisson
// hash and application data.
func BenchmarkAnalyze(b *testing.B) {
	ks := lockcore.FenceKeyFor("lock:OrderId:order-demo-001")
	inputs := []struct {
		name string
		key  string
		v    inspect.Value
		comp map[string]inspect.Value
	}{
		{"lockctl", "lock:OrderId:order-demo-001", inspect.Value{Type: "string", PTTL: 41234, ExpireAtMS: 1e12, Bytes: []byte("34:0123456789abcdef0123456789abcdef"), Size: 35},
			map[string]inspect.Value{ks: {Type: "string", PTTL: -1, Bytes: []byte("34")}}},
		{"redsync", "rs:job", inspect.Value{Type: "string", PTTL: 8000, Bytes: []byte("q2hZ3k0FzA8sV1xY7bN4Ag=="), Size: 24}, nil},
		{"redisson", "concurrent-test2", inspect.Value{Type: "hash", PTTL: 30000, Fields: [][2]string{{"ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1", "1"}}, Size: 1}, nil},
		{"data", "user:42", inspect.Value{Type: "string", PTTL: -1, Bytes: []byte(`{"name":"alice","plan":"pro"}`), Size: 29}, nil},
	}
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = inspect.Analyze(in.key, in.v, in.comp, inspect.Options{})
			}
		})
	}
}

// BenchmarkRead measures the pipelined reads and decoding of one SCAN page
// of 1000 locks on a real Redis (two round trips).
func BenchmarkRead(b *testing.B) {
	c := client(b)
	keys := make([]string, 1000)
	pipe := c.Pipeline()
	for i := range keys {
		keys[i] = fmt.Sprintf("bench:lock:%d", i)
		pipe.Set(ctx, keys[i], lockcore.FormatValue(int64(i), lockcore.NewOwnerToken()), time.Hour)
	}
	_, err := pipe.Exec(ctx)
	must(b, err)
	r := &inspect.Reader{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Read(ctx, c, keys); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
}
