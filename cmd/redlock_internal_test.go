package cmd

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/golden"
)

// TestQuorumTableGolden renders inspect over 5 Redlock nodes as a table:
// a quorum with a node down, a split and a minority, from fixed reads.
func TestQuorumTableGolden(t *testing.T) {
	const a, b = "q2hZ3k0FzA8sV1xY7bN4Ag==", "Zm9vYmFyYmF6cXV4MTIzNA=="
	keys := []string{"rl:quorum", "rl:split", "rl:minority"}
	vals := [][]string{ // per node, per key
		{a, a, a},
		{a, a, a},
		{a, b, ""},
		{"", b, ""},
		{"down", "down", "down"},
	}
	t0 := time.UnixMilli(1_700_000_000_000)
	reads := make([]inspect.NodeRead, len(vals))
	for i, vs := range vals {
		r := inspect.NodeRead{Addr: "10.0.0." + string(rune('1'+i)) + ":6379", At: t0, Done: t0.Add(time.Millisecond)}
		for k, v := range vs {
			switch v {
			case "down":
				r.Err = errors.New("dial tcp 10.0.0.5:6379: connect: connection refused")
			case "":
				r.Locks = append(r.Locks, inspect.Analyze(keys[k], inspect.Value{Type: "none", PTTL: -2}, nil, inspect.Options{}))
			default:
				pttl := int64(29000 - 100*i)
				r.Locks = append(r.Locks, inspect.Analyze(keys[k], inspect.Value{Type: "string", PTTL: pttl, ExpireAtMS: t0.UnixMilli() + pttl, Bytes: []byte(v), Size: int64(len(v))}, nil, inspect.Options{}))
			}
		}
		if r.Err != nil {
			r.Locks = nil
		}
		reads[i] = r
	}
	rep := inspect.NewQuorumReport(keys, reads, inspect.QuorumOptions{LeaseMS: 30000})
	var out bytes.Buffer
	p := &Printer{Format: formatTable, Out: &out, Styles: newStyles(&out, false)}
	if err := p.Print(rep, func(tv *TableView) { quorumTable(tv, rep, true) }); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, out.Bytes(), ".table")
}
