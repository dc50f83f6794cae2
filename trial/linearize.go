package trial

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockctl/lockctl/history"
)

// Linearizability check statuses (Result.Linearizable; docs/trial.md).
const (
	LinearizableOK       = "ok"       // Porcupine found an order a single register could have produced
	LinearizableViolated = "violated" // it proved there is none: history.CodeNotLinearizable
	LinearizableUnknown  = "unknown"  // it ran out of linearizeTimeout: neither proof, never "safe"
)

// linearizeTimeout bounds the whole Porcupine check: linearizability
// checking is NP-complete (Gibbons and Korach 1997), so a long history with
// many overlapping writes may not be decided in time.
const linearizeTimeout = 10 * time.Second

// maxWindowRows caps the operations a history.CodeNotLinearizable violation lists,
// maxWindows the violations of one resource.
const (
	maxWindowRows = 20
	maxWindows    = 10
)

// regInput is one client operation as the register model reads it: the
// value it read and the value it wrote, as canonical JSON text (nil: it
// read nothing, or its write's value is unknown), and whether it is pending
// (an invoke with no ok or fail line: it may or may not have taken effect).
type regInput struct {
	resource    string
	read, write *string
	wrote       bool // a write, whether its value is known or not
	pending     bool
	op          Op // the ok line (the invoke line when pending), for the report
}

// regState is the register's value; known is false at the start (the value
// before the trial is not in the history) and after a write without value.
type regState struct {
	known bool
	v     string
}

// registerModel is one register per resource (Porcupine partitions the
// history by it): a write without read sets the value, a read-modify-write
// (read and value) takes effect only on the value it read, as a
// compare-and-set, so two workers writing back from the same read (a lost
// update) have no linearization. A pending operation whose read does not
// match did not take effect.
var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		for _, o := range h {
			r := o.Input.(regInput).resource
			by[r] = append(by[r], o)
		}
		out := make([][]porcupine.Operation, 0, len(by))
		for _, r := range sortedKeys(by) {
			out = append(out, by[r])
		}
		return out
	},
	Init: func() any { return regState{} },
	Step: func(state, input, _ any) (bool, any) {
		s, in := state.(regState), input.(regInput)
		if in.read != nil && s.known && s.v != *in.read {
			return in.pending, s
		}
		switch {
		case in.wrote && in.write != nil:
			return true, regState{known: true, v: *in.write}
		case in.wrote:
			return true, regState{}
		default:
			return true, regState{known: true, v: *in.read}
		}
	},
	DescribeOperation: func(input, _ any) string { return describeRegOp(input.(regInput)) },
	DescribeState: func(state any) string {
		if s := state.(regState); s.known {
			return s.v
		}
		return "?"
	},
}

func describeRegOp(in regInput) string {
	show := func(p *string) string {
		if p == nil {
			return "?"
		}
		return *p
	}
	var s string
	switch {
	case in.read != nil && in.wrote:
		s = fmt.Sprintf("read %s, wrote %s", *in.read, show(in.write))
	case in.wrote:
		s = "wrote " + show(in.write)
	default:
		s = "read " + *in.read
	}
	if in.pending {
		s += " (no ok or fail: may have taken effect)"
	}
	return s
}

// linearizeReport is the outcome of checkLinearizable: its status (""
// when no resource had a read to check), its violations, and a note.
type linearizeReport struct {
	status     string
	violations []Violation
	note       string
}

// checkLinearizable checks, with Porcupine, that the writes of every
// resource on which some operation reports a "read" could have happened one
// at a time on a single register, each between its invoke and its ok line
// (Herlihy and Wing 1990), within timeout in all. A resource that has none
// is not a register the history describes and is left to judgeHistory.
func checkLinearizable(ops []Op, timeout time.Duration) linearizeReport {
	hist := registerHistory(ops)
	if len(hist) == 0 {
		return linearizeReport{}
	}
	deadline := time.Now().Add(timeout)
	var all []porcupine.Operation
	for _, r := range sortedKeys(hist) {
		all = append(all, hist[r]...)
	}
	switch porcupine.CheckOperationsTimeout(registerModel, all, timeout) {
	case porcupine.Ok:
		return linearizeReport{status: LinearizableOK}
	case porcupine.Unknown:
		return unknownReport(len(all), timeout)
	}
	rep := linearizeReport{status: LinearizableViolated}
	for _, r := range sortedKeys(hist) {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		if porcupine.CheckOperationsTimeout(registerModel, hist[r], left) != porcupine.Illegal {
			continue
		}
		for _, w := range failingWindows(hist[r], deadline) {
			v := windowViolation(r, w)
			v.Linearization = linearizationOf(w, time.Until(deadline))
			rep.violations = append(rep.violations, v)
		}
	}
	if len(rep.violations) == 0 { // the whole history was proved illegal, its resources ran out of time
		rep.violations = append(rep.violations, windowViolation("", all))
	}
	return rep
}

func unknownReport(n int, timeout time.Duration) linearizeReport {
	return linearizeReport{status: LinearizableUnknown, note: fmt.Sprintf(
		"the linearizability check of %d operations did not finish within %s: whether they are linearizable is unknown (not safe)", n, timeout)}
}

// registerHistory pairs each worker's ok (or pending invoke) with the
// invoke it printed last into Porcupine operations, per resource that some
// operation reports a read of. Call and Return are ns since the epoch (ms
// when the line has no arrival time); a pending operation never returns.
// A fail line's write did not take effect and is left out.
func registerHistory(ops []Op) map[string][]porcupine.Operation {
	checked := map[string]bool{}
	for _, op := range ops {
		if op.Read != nil {
			checked[op.Resource] = true
		}
	}
	hist := map[string][]porcupine.Operation{}
	add := func(inv *Op, end Op, pending bool) {
		if !checked[end.Resource] {
			return
		}
		start, ret := end, opNanos(end)
		if inv != nil {
			start = *inv
		}
		if pending {
			ret = math.MaxInt64
		}
		in := regInput{resource: end.Resource, pending: pending, op: end,
			read: canonical(end.Read, start.Read), write: canonical(end.Value, start.Value)}
		in.wrote = in.write != nil || in.read == nil
		hist[end.Resource] = append(hist[end.Resource], porcupine.Operation{ClientId: end.Worker - 1, Input: in, Call: opNanos(start), Return: ret})
	}
	invoked := map[int]Op{}
	for _, op := range ops {
		inv, open := invoked[op.Worker]
		if open && (op.Op == OpInvoke || inv.Resource != op.Resource) { // the worker moved on: that invoke's end is unknown
			add(&inv, inv, true)
			delete(invoked, op.Worker)
			open = false
		}
		switch op.Op {
		case OpInvoke:
			invoked[op.Worker] = op
		case OpFail:
			delete(invoked, op.Worker)
		case OpOK:
			if open {
				add(&inv, op, false)
			} else {
				add(nil, op, false)
			}
			delete(invoked, op.Worker)
		}
	}
	for _, w := range sortedKeys(invoked) {
		inv := invoked[w]
		add(&inv, inv, true)
	}
	return hist
}

// failingWindows cuts a resource's illegal history to the shortest runs of
// consecutive blocks that Porcupine still proves illegal (at most
// maxWindows, the last first), a block ending where every operation called
// so far has returned (pending ones aside).
// Such a cut keeps the proof: the operations before it all precede those
// after it, and the register's value at it is left unknown, as at the
// start. O(log n) checks a window, until deadline; when time runs out, the
// smallest window proved so far (the whole history at worst).
func failingWindows(h []porcupine.Operation, deadline time.Time) [][]porcupine.Operation {
	h = append([]porcupine.Operation(nil), h...)
	sort.SliceStable(h, func(i, j int) bool { return h[i].Call < h[j].Call })
	cuts := []int{0} // indices in h where a block starts
	var maxRet int64 = math.MinInt64
	for i, o := range h {
		if i > 0 && maxRet < o.Call {
			cuts = append(cuts, i)
		}
		if !o.Input.(regInput).pending && o.Return > maxRet {
			maxRet = o.Return
		}
	}
	cuts = append(cuts, len(h))
	window := func(from, to int) []porcupine.Operation { // blocks [from, to), with the pending ops called before
		var w []porcupine.Operation
		for i, o := range h[:cuts[to]] {
			if i >= cuts[from] || o.Input.(regInput).pending {
				w = append(w, o)
			}
		}
		return w
	}
	illegal := func(from, to int) bool {
		left := time.Until(deadline)
		return left > 0 && porcupine.CheckOperationsTimeout(registerModel, window(from, to), left) == porcupine.Illegal
	}
	var out [][]porcupine.Operation
	// Each window is searched before the last one's start, the whole
	// history being known illegal: the failing parts do not overlap.
	for blocks := len(cuts) - 1; len(out) < maxWindows && blocks > 0 && (len(out) == 0 || illegal(0, blocks)); {
		start, end := lastWindow(blocks, illegal)
		out = append(out, window(start, end))
		blocks = start
	}
	return out
}

// lastWindow is the latest-starting shortest run of blocks within
// [0, blocks) that illegal proves, [0, blocks) being one: gallop back from
// the end (the search costs about twice the failing part, not the
// history), then narrow the start, the end, and the start again.
func lastWindow(blocks int, illegal func(from, to int) bool) (int, int) {
	start, legal := 0, blocks
	for k := 1; ; k *= 2 {
		start = max(blocks-k, 0)
		if start == 0 || illegal(start, blocks) {
			break
		}
		legal = start
	}
	start = largestStart(start, legal-1, blocks, illegal)
	end := blocks // the smallest end whose window from start is illegal
	for lo, hi := start+1, blocks; lo < hi; {
		if mid := (lo + hi) / 2; illegal(start, mid) {
			hi, end = mid, mid
		} else {
			lo = mid + 1
		}
	}
	return largestStart(start, end-1, end, illegal), end
}

// largestStart is the largest start in [lo, hi] whose window to end is
// illegal, lo when none after it is (lo's is taken to be).
func largestStart(lo, hi, end int, illegal func(from, to int) bool) int {
	start := lo
	for lo++; lo <= hi; {
		if mid := (lo + hi) / 2; illegal(mid, end) {
			lo, start = mid+1, mid
		} else {
			hi = mid - 1
		}
	}
	return start
}

// windowViolation reports a failing window: at its last return, with its
// operations as rows (worker, invoke and ok in ms since the start, what it
// did), at most maxWindowRows of them.
func windowViolation(resource string, w []porcupine.Operation) Violation {
	last := w[0].Input.(regInput).op
	workers := map[int]bool{}
	for _, o := range w {
		in := o.Input.(regInput)
		workers[in.op.Worker] = true
		if !in.pending && in.op.AtMS >= last.AtMS {
			last = in.op
		}
	}
	detail := fmt.Sprintf("%d operations of %d workers on %s have no order in which one register gives every read its value (a lost update)",
		len(w), len(workers), resourceName(resource))
	if len(w) > maxWindowRows {
		detail += fmt.Sprintf("; the first %d shown", maxWindowRows)
	}
	v := last.violation(history.CodeNotLinearizable, detail)
	v.Fence, v.Key = nil, nil
	for i, o := range w {
		if i == maxWindowRows {
			break
		}
		in := o.Input.(regInput)
		ok := fmtMS(in.op.AtMS)
		if in.pending {
			ok = "-"
		}
		v.Rows = append(v.Rows, []string{fmt.Sprintf("w%d", in.op.Worker), fmtMS(msSince(o.Call, in.op)), ok, describeRegOp(in)})
	}
	return v
}

// msSince turns a Call back into ms since the trial's start, by the ok
// line's own pair of stamps.
func msSince(call int64, ref Op) int64 {
	return ref.AtMS - (opNanos(ref)-call)/int64(time.Millisecond)
}

// opNanos is when the line arrived, ns since the epoch; ms since the start
// for an operation built without an arrival time (a recorded history).
func opNanos(op Op) int64 {
	if op.at.IsZero() {
		return op.AtMS * int64(time.Millisecond)
	}
	return op.at.UnixNano()
}

// canonical is the first present of vals as compact JSON with sorted object
// keys (numbers as written: 5 and 5.0 differ); nil when none is present.
func canonical(vals ...json.RawMessage) *string {
	for _, raw := range vals {
		if raw == nil {
			continue
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber() // an int64 counter stays exact
		if d.Decode(&v) != nil {
			s := string(raw)
			return &s
		}
		b, _ := json.Marshal(v)
		s := string(b)
		return &s
	}
	return nil
}

func sortedKeys[K int | string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
