package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// quorumReads builds the reads of one key over len(vals) nodes: "" is no
// key, "down" a node that failed, else the owner, with pttls[i] ms left.
func quorumReads(vals []string, pttls []int64) []NodeRead {
	t0 := time.UnixMilli(1_700_000_000_000)
	out := make([]NodeRead, len(vals))
	for i, v := range vals {
		r := NodeRead{Addr: "n" + string(rune('1'+i)) + ":6379", At: t0, Done: t0.Add(time.Millisecond)}
		switch v {
		case "down":
			r.Err = errors.New("dial tcp: connection refused")
		case "":
			r.Locks = []Lock{Analyze("k", Value{Type: "none", PTTL: -2}, nil, Options{})}
		default:
			r.Locks = []Lock{Analyze("k", Value{Type: "string", PTTL: pttls[i], Bytes: []byte(v), Size: int64(len(v))}, nil, Options{})}
		}
		out[i] = r
	}
	return out
}

func findingCodes(l QuorumLock) []string {
	var out []string
	for _, f := range l.Findings {
		out = append(out, f.Code)
	}
	return out
}

// TestAnalyzeQuorum: the quorum's owner, held count, state, validity
// (majority-th largest PTTL minus 1% + 2ms) and findings over 5 nodes.
func TestAnalyzeQuorum(t *testing.T) {
	const a, b = "q2hZ3k0FzA8sV1xY7bN4Ag==", "Zm9vYmFyYmF6cXV4MTIzNA=="
	for _, c := range []struct {
		name     string
		vals     []string
		pttls    []int64
		state    string
		owner    string
		held     int
		validity int64 // -1: null
		want     []string
		not      []string
	}{
		{"quorum", []string{a, a, a, "", ""}, []int64{30000, 29990, 29980, 0, 0}, QuorumHeld, a, 3, 29980 - 302, nil,
			[]string{FindingNoQuorum, FindingSplitOwners, FindingTTLSkew}},
		{"all five", []string{a, a, a, a, a}, []int64{30000, 29999, 29998, 29997, 29996}, QuorumHeld, a, 5, 29998 - 302, nil, []string{FindingTTLSkew}},
		{"free", []string{"", "", "", "", ""}, nil, QuorumFree, "", 0, -1, []string{FindingAbsent}, []string{FindingNoQuorum}},
		{"minority", []string{a, a, "", "", ""}, []int64{30000, 30000, 0, 0, 0}, QuorumNoQuorum, "", 2, -1,
			[]string{FindingNoQuorum, FindingMinorityHolder}, []string{FindingSplitOwners}},
		{"split", []string{a, a, b, b, ""}, []int64{30000, 30000, 30000, 30000, 0}, QuorumSplit, "", 2, -1,
			[]string{FindingNoQuorum, FindingSplitOwners}, []string{FindingMinorityHolder}},
		{"quorum and a loser", []string{a, a, a, b, b}, []int64{30000, 30000, 30000, 30000, 30000}, QuorumHeld, a, 3, 30000 - 302,
			[]string{FindingSplitOwners}, []string{FindingNoQuorum}},
		{"skew", []string{a, a, a, a, ""}, []int64{30000, 30000, 30000, 20000, 0}, QuorumHeld, a, 4, 30000 - 302, []string{FindingTTLSkew}, nil},
		{"skew within drift", []string{a, a, a, "", ""}, []int64{30000, 29800, 29750, 0, 0}, QuorumHeld, a, 3, 29750 - 302, nil, []string{FindingTTLSkew}},
		{"down, still held", []string{a, a, a, "", "down"}, []int64{30000, 30000, 30000, 0, 0}, QuorumHeld, a, 3, 30000 - 302,
			[]string{FindingNodeUnreachable}, []string{FindingNoQuorum}},
		{"down, held lost", []string{a, a, "down", "down", ""}, []int64{30000, 30000, 0, 0, 0}, QuorumNoQuorum, "", 2, -1,
			[]string{FindingNoQuorum, FindingMinorityHolder, FindingNodeUnreachable}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := AnalyzeQuorum("k", 0, quorumReads(c.vals, c.pttls), QuorumOptions{})
			got := q.Quorum
			if got.State != c.state || got.Held != c.held || got.Nodes != 5 || got.Majority != 3 {
				t.Errorf("quorum %+v; want state %s held %d", got, c.state, c.held)
			}
			if (got.Owner == nil) != (c.owner == "") || got.Owner != nil && *got.Owner != c.owner {
				t.Errorf("owner %v, want %q", got.Owner, c.owner)
			}
			if (got.ValidityMS == nil) != (c.validity < 0) || got.ValidityMS != nil && *got.ValidityMS != c.validity {
				t.Errorf("validity %v, want %d", got.ValidityMS, c.validity)
			}
			codes := findingCodes(q)
			for _, w := range c.want {
				if !slices.Contains(codes, w) {
					t.Errorf("findings %v lack %s", codes, w)
				}
			}
			for _, w := range c.not {
				if slices.Contains(codes, w) {
					t.Errorf("findings %v have %s", codes, w)
				}
			}
			if c.owner != "" && q.Owner != c.owner {
				t.Errorf("representative lock's owner %q", q.Owner)
			}
		})
	}
}

// TestQuorumOtherNodesFindings: a finding on a node other than the one the
// key row is read from (a key left without a TTL there) is added, naming it.
func TestQuorumOtherNodesFindings(t *testing.T) {
	reads := quorumReads([]string{"tok-a", "tok-a", "tok-a"}, []int64{30000, 30000, -1})
	q := AnalyzeQuorum("k", 0, reads, QuorumOptions{})
	var msg string
	for _, f := range q.Findings {
		if f.Code == FindingNoTTL {
			msg = f.Message
		}
	}
	if msg != "on node n3:6379: no TTL (PTTL -1)" {
		t.Errorf("NO_TTL on node 3: %q in %v", msg, findingCodes(q))
	}
	if *q.Quorum.ValidityMS != 30000-302 {
		t.Errorf("validity with one key without TTL: %d", *q.Quorum.ValidityMS)
	}
}

// TestTTLSkewLease: a 200ms gap is within the drift of a 30s lease, over
// that of a lease estimated from 2s left.
func TestTTLSkewLease(t *testing.T) {
	reads := quorumReads([]string{"x", "x", "x"}, []int64{2000, 2000, 1800})
	if c := findingCodes(AnalyzeQuorum("k", 0, reads, QuorumOptions{})); !slices.Contains(c, FindingTTLSkew) {
		t.Errorf("lease unknown: %v lack TTL_SKEW", c)
	}
	if c := findingCodes(AnalyzeQuorum("k", 0, reads, QuorumOptions{LeaseMS: 30000})); slices.Contains(c, FindingTTLSkew) {
		t.Errorf("lease 30s: %v have TTL_SKEW", c)
	}
}

// TestDriftMS: 1% of the lease + 2ms, as redsync and the Redis docs compute it.
func TestDriftMS(t *testing.T) {
	for lease, want := range map[int64]int64{10000: 102, 30000: 302, 100: 3, 0: 2} {
		if got := DriftMS(lease); got != want {
			t.Errorf("DriftMS(%d) = %d, want %d", lease, got, want)
		}
	}
	if q := AnalyzeQuorum("k", 0, quorumReads([]string{"x", "x", "x"}, []int64{5000, 5000, 5000}), QuorumOptions{LeaseMS: 10000}); q.Quorum.DriftMS != 102 || *q.Quorum.ValidityMS != 5000-102 {
		t.Errorf("LeaseMS 10000: %+v", q.Quorum)
	}
}

// TestQuorumDiffer: node events, then the quorum's held, acquired, split and lost.
func TestQuorumDiffer(t *testing.T) {
	d := NewQuorumDiffer(3, WatchOptions{}, QuorumOptions{})
	step := func(vals ...string) []string {
		reads := quorumReads(vals, []int64{30000, 30000, 30000})
		var out []string
		for _, e := range d.Next("k", 0, reads) {
			w := e.Event.Event
			if e.Node != "" {
				w = e.Node + " " + w
			}
			out = append(out, w)
		}
		return out
	}
	for i, c := range []struct {
		vals []string
		want []string
	}{
		{[]string{"", "", ""}, []string{"n1:6379 FREE", "n2:6379 FREE", "n3:6379 FREE", "QUORUM_FREE"}},
		{[]string{"a", "a", ""}, []string{"n1:6379 ACQUIRED", "n2:6379 ACQUIRED", "QUORUM_ACQUIRED"}},
		{[]string{"a", "b", "b"}, []string{"n2:6379 TAKEOVER", "n3:6379 ACQUIRED", "QUORUM_ACQUIRED", "SPLIT"}},
		{[]string{"a", "b", "down"}, []string{"n3:6379 NODE_DOWN", "QUORUM_LOST"}},
		{[]string{"a", "b", ""}, []string{"n3:6379 NODE_UP", "n3:6379 RELEASED"}},
	} {
		if got := step(c.vals...); !slices.Equal(got, c.want) {
			t.Errorf("step %d %v: events %v, want %v", i, c.vals, got, c.want)
		}
	}
}

// TestReadQuorum reads more keys than one batch on 3 real servers, with a
// node down, then with none up (NoNodeError).
func TestReadQuorum(t *testing.T) {
	t.Parallel()
	var nodes []Node
	var servers []*redistest.Server
	for range 3 {
		s := redistest.Start(t)
		servers = append(servers, s)
		nodes = append(nodes, Node{Addr: s.Addr, Client: s.Client(t)})
	}
	keys := make([]string, quorumBatch+200)
	for i := range keys {
		keys[i] = fmt.Sprintf("rq:%04d", i)
	}
	for _, s := range servers[:2] {
		pipe := s.Client(t).Pipeline()
		for _, k := range keys {
			pipe.Set(context.Background(), k, "tok-"+k, 30*time.Second)
		}
		if _, err := pipe.Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	servers[2].Stop()
	r := &Reader{Light: true}
	rep, err := r.ReadQuorum(context.Background(), nodes, keys, QuorumOptions{})
	if err != nil || len(rep.Locks) != len(keys) || rep.Summary.Locks != len(keys) {
		t.Fatalf("ReadQuorum: %v, %d locks", err, len(rep.Locks))
	}
	last := rep.Locks[len(keys)-1]
	if last.Key != keys[len(keys)-1] || last.Quorum.State != QuorumHeld || last.Quorum.Held != 2 || last.Quorum.Answered != 2 || *last.Quorum.Owner != "tok-"+last.Key {
		t.Errorf("last key: %s %+v", last.Key, last.Quorum)
	}
	servers[0].Stop()
	servers[1].Stop()
	var none *NoNodeError
	if _, err := r.ReadQuorum(context.Background(), nodes, keys, QuorumOptions{}); !errors.As(err, &none) || none.Addr != servers[0].Addr {
		t.Errorf("no node up: %v", err)
	}
}

// TestReadNodesWrongPassword: a node that refuses the password reads as
// failed (go-redis reports the AUTH refusal only as Exec's error, with no
// error on the queued commands), not as a node where the key is free.
func TestReadNodesWrongPassword(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, "--requirepass", "right-pw")
	admin := redis.NewClient(&redis.Options{Addr: s.Addr, Password: "right-pw"})
	defer admin.Close()
	if err := admin.Set(context.Background(), "k", "tok", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for _, light := range []bool{false, true} {
		wrong := redis.NewClient(&redis.Options{Addr: s.Addr, Password: "wrong-pw"})
		defer wrong.Close()
		reads := (&Reader{Light: light}).ReadNodes(context.Background(), []Node{{Addr: s.Addr, Client: wrong}}, []string{"k"})
		if reads[0].Err == nil || !strings.Contains(reads[0].Err.Error(), "WRONGPASS") {
			t.Errorf("light %v: read with a wrong password: err %v, locks %+v; want WRONGPASS", light, reads[0].Err, reads[0].Locks)
		}
	}
}
