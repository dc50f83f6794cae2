package trial

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
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
// already returned before it was invoked is STALE_WRITE_ACCEPTED
// (Kleppmann 2016: the store took the stale holder's write after a newer
// holder's). A key already seen in an ok operation is DUPLICATE_EFFECT.
func judgeHistory(ops []Op) []Violation {
	type done struct {
		fence  int64
		worker int
		okMS   int64 // this write's ok
		atMS   int64 // the ok of the write with fence
	}
	var out []Violation
	highest := map[string][]done{} // per resource: the running maximum by ok order
	keys := map[string]Op{}
	invokedMS := map[int]int64{}
	committed := map[string][]Op{} // ok writes with a seq, per resource
	for _, op := range ops {
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
			committed[op.Resource] = append(committed[op.Resource], op)
		} else if op.Fence != nil {
			hs := highest[op.Resource]
			// The highest fence among the writes that returned before this one began.
			i := sort.Search(len(hs), func(i int) bool { return hs[i].okMS >= start }) - 1
			if i >= 0 && hs[i].fence > *op.Fence {
				h := hs[i]
				out = append(out, op.violation(CodeStaleWrite, fmt.Sprintf("worker %d's write to %s with fence %d was accepted after fence %d (worker %d, done at %s)",
					op.Worker, resourceName(op.Resource), *op.Fence, h.fence, h.worker, fmtMS(h.atMS))))
			}
			top := done{*op.Fence, op.Worker, op.AtMS, op.AtMS}
			if n := len(hs); n > 0 && hs[n-1].fence > top.fence {
				top.fence, top.worker, top.atMS = hs[n-1].fence, hs[n-1].worker, hs[n-1].atMS
			}
			highest[op.Resource] = append(hs, top)
		}
		if op.Key != nil {
			if first, ok := keys[*op.Key]; ok {
				out = append(out, op.violation(CodeDuplicate, fmt.Sprintf("worker %d's write with key %q took effect again (first by worker %d at %s)",
					op.Worker, *op.Key, first.Worker, fmtMS(first.AtMS))))
			} else {
				keys[*op.Key] = op
			}
		}
	}
	return append(out, staleBySeq(committed)...)
}

// staleBySeq checks writes whose commit order the worker reported (seq):
// in that order, a fence below an earlier one of the same resource is
// STALE_WRITE_ACCEPTED, whatever the times of the lines.
func staleBySeq(committed map[string][]Op) []Violation {
	var out []Violation
	resources := make([]string, 0, len(committed))
	for r := range committed {
		resources = append(resources, r)
	}
	sort.Strings(resources)
	for _, r := range resources {
		ops := committed[r]
		sort.SliceStable(ops, func(i, j int) bool { return *ops[i].Seq < *ops[j].Seq })
		var top Op
		for i, op := range ops {
			if i > 0 && *op.Fence < *top.Fence {
				out = append(out, op.violation(CodeStaleWrite, fmt.Sprintf("worker %d's write to %s with fence %d was committed (seq %d) after fence %d (worker %d, seq %d)",
					op.Worker, resourceName(op.Resource), *op.Fence, *op.Seq, *top.Fence, top.Worker, *top.Seq)))
			}
			if i == 0 || *op.Fence > *top.Fence {
				top = op
			}
		}
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
