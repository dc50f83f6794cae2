package trial

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockctl/lockctl/history"
)

// Client history operations (docs/trial.md, "Client history"): Jepsen's
// invoke/ok/fail. Only ok operations are judged: they are the writes the
// worker saw committed.
const (
	OpInvoke = "invoke"
	OpOK     = "ok"
	OpFail   = "fail"
)

// Op is one JSON line a worker printed on stdout, e.g.
// {"op":"ok","resource":"balance:42","fence":7,"key":"req-9"}. Fence is the
// fencing token the write carried, Key its idempotency key, Seq its place
// in the store's commit order (an id or version the commit returned); all
// optional.
type Op struct {
	Op       string          `json:"op"`
	Resource string          `json:"resource"`
	Fence    *int64          `json:"fence"`
	Key      *string         `json:"key"`
	Seq      *int64          `json:"seq"`
	Value    json.RawMessage `json:"value,omitempty"`
	// Read is the value a read-modify-write read before it wrote Value
	// (or a read's, without Value): it makes the resource a register that
	// checkLinearizable checks.
	Read json.RawMessage `json:"read,omitempty"`
	// Worker and AtMS are set by the trial when the line arrives.
	Worker int   `json:"-"`
	AtMS   int64 `json:"-"`
	at     time.Time
}

// parseOp reads one stdout line as an operation; ok is false for any other
// line (the worker's own output passes unjudged).
func parseOp(line string) (Op, bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "{") {
		return Op{}, false
	}
	var op Op
	if err := json.Unmarshal([]byte(line), &op); err != nil {
		return Op{}, false
	}
	switch op.Op {
	case OpInvoke, OpOK, OpFail:
		return op, true
	}
	return Op{}, false
}

// judgeHistory checks the ok operations (ops in the order lockctl received
// them). A write that reports its place in the commit order (seq) is judged
// in that order (staleBySeq). Any other write took effect somewhere between
// its invoke line (the one the same worker printed last before it; without
// one, its ok line) and its ok line, as in Jepsen's histories: an ok write
// whose fence is below that of an ok write of the same resource that had
// already returned before it was invoked is history.CodeStaleWrite
// (Kleppmann 2016: the store took the stale holder's write after a newer
// holder's). A key already seen in an ok operation is history.CodeDuplicate.
func judgeHistory(ops []Op) []Violation {
	type done struct {
		fence  int64
		worker int
		okMS   int64 // this write's ok
		atMS   int64 // the ok of the write with fence
	}
	var out []Violation
	highest := map[string][]done{} // per resource: the running maximum by ok order
	invokedMS := map[int]int64{}
	var committed []Op // ok writes with a fence and a seq
	again := repeatedKeys(ops)
	for i, op := range ops {
		switch op.Op {
		case OpInvoke:
			invokedMS[op.Worker] = op.AtMS
			continue
		case OpFail:
			delete(invokedMS, op.Worker)
			continue
		}
		start, ok := invokedMS[op.Worker]
		if !ok {
			start = op.AtMS
		}
		delete(invokedMS, op.Worker)
		if op.Fence != nil && op.Seq != nil {
			committed = append(committed, op)
		} else if op.Fence != nil {
			hs := highest[op.Resource]
			// The highest fence among the writes that returned before this one began.
			j := sort.Search(len(hs), func(j int) bool { return hs[j].okMS >= start }) - 1
			if j >= 0 && hs[j].fence > *op.Fence {
				h := hs[j]
				out = append(out, op.violation(history.CodeStaleWrite, fmt.Sprintf("worker %d's write to %s with fence %d was accepted after fence %d (worker %d, done at %s)",
					op.Worker, resourceName(op.Resource), *op.Fence, h.fence, h.worker, fmtMS(h.atMS))))
			}
			top := done{*op.Fence, op.Worker, op.AtMS, op.AtMS}
			if n := len(hs); n > 0 && hs[n-1].fence > top.fence {
				top.fence, top.worker, top.atMS = hs[n-1].fence, hs[n-1].worker, hs[n-1].atMS
			}
			highest[op.Resource] = append(hs, top)
		}
		if first, ok := again[i]; ok {
			out = append(out, op.violation(history.CodeDuplicate, fmt.Sprintf("worker %d's write with key %q took effect again (first by worker %d at %s)",
				op.Worker, *op.Key, ops[first].Worker, fmtMS(ops[first].AtMS))))
		}
	}
	return append(out, staleBySeq(committed)...)
}

// repeatedKeys maps the index of each ok operation whose key an earlier ok
// operation already had to the index of that first one.
func repeatedKeys(ops []Op) map[int]int {
	writes := make([]history.Write, len(ops))
	for i, op := range ops {
		if op.Op == OpOK {
			writes[i].Key = op.Key
		}
	}
	again := map[int]int{}
	for _, idx := range history.DuplicateKeys(writes) {
		for _, i := range idx[1:] {
			again[i] = idx[0]
		}
	}
	return again
}

// staleBySeq checks writes whose commit order the worker reported (seq):
// in that order, per resource, a fence below an earlier one is a stale
// write (history.StaleWrites), whatever the times of the lines.
func staleBySeq(committed []Op) []Violation {
	sort.SliceStable(committed, func(i, j int) bool {
		a, b := committed[i], committed[j]
		return a.Resource < b.Resource || a.Resource == b.Resource && *a.Seq < *b.Seq
	})
	writes := make([]history.Write, len(committed))
	for i, op := range committed {
		writes[i] = history.Write{Fence: op.Fence, Resource: op.Resource}
	}
	var out []Violation
	for _, st := range history.StaleWrites(writes) {
		op, top := committed[st.Write], committed[st.After]
		out = append(out, op.violation(history.CodeStaleWrite, fmt.Sprintf("worker %d's write to %s with fence %d was committed (seq %d) after fence %d (worker %d, seq %d)",
			op.Worker, resourceName(op.Resource), *op.Fence, *op.Seq, *top.Fence, top.Worker, *top.Seq)))
	}
	return out
}

func (op Op) violation(code, detail string) Violation {
	return Violation{Code: code, At: rfc3339ms(op.at), AtMS: op.AtMS, Worker: op.Worker, Source: SourceClient,
		Resource: op.Resource, Fence: op.Fence, Key: op.Key, Detail: detail}
}

func resourceName(r string) string {
	if r == "" {
		return "the resource"
	}
	return fmt.Sprintf("%q", r)
}

func rfc3339ms(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// fmtMS is ms as a duration with its unit ("1.5s").
func fmtMS(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }
