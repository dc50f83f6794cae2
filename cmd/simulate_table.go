package cmd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/lockctl/lockctl/simulate"
)

// The table printer of `lockctl simulate`: timeline, swimlane, verdict and
// guards of a run, and the list of built-in scenarios.

// SimulateListResult is the JSON shape of `lockctl simulate --list`.
type SimulateListResult struct {
	Scenarios []simulate.BuiltinInfo `json:"scenarios"`
}

// resultTable renders a run: heading, timeline, swimlane, verdict,
// violations, guards, store and notes.
func resultTable(t *TableView, res simulate.Result) {
	st := t.Styles()
	t.Title("scenario " + oneLineText(res.Scenario))
	t.Line("lease %s", leaseText(res.Lease))
	if res.Nodes > 1 {
		t.Line("nodes: %d Redlock nodes, a majority of %d within the validity time (lease − elapsed − %s drift)", res.Nodes, res.Nodes/2+1, fmtMS(res.Lease.MarginMS))
		t.Line("lock: the holder on a majority, the majority's PTTL, #fence; nodes: each node's holder (· free, x down); store: the highest fence the store has seen")
	} else {
		t.Line("lock: holder, PTTL, #fence after the event; store: the highest fence the store has seen")
	}
	t.Line("")
	header, rows := timelineRows(res)
	t.Table(header, rows)
	t.Line("")
	for _, l := range swimlane(st, res.History(), laneWidth(t.Width())) {
		t.Line("%s", l)
	}
	t.Line("")
	t.Line("verdict: %s", st.Level(res.Verdict))
	for _, v := range res.Violations {
		t.Line("  %s %s at %s (%s): %s", st.Level("error"), v.Code, fmtMS(v.AtMS), v.Actor, v.Message)
	}
	t.Line("guards:")
	for _, g := range res.Guards {
		on := "on "
		if !g.Enabled {
			on = "off"
		}
		line := fmt.Sprintf("  %-15s %s  %s", g.Guard, on, guardEffect(st, g.Effect))
		if g.Note != "" {
			line += ": " + g.Note
		}
		t.Line("%s", line)
	}
	correct := st.Level("ok")
	if !res.Store.Correct {
		correct = st.Level("error") + " a stale write was accepted"
	}
	t.Line("store: highest fence %d, %d accepted, %d rejected: %s", res.Store.HighestFence, res.Store.Accepted, res.Store.Rejected, correct)
	for _, n := range res.Notes {
		t.Line("note: %s", n)
	}
}

func guardEffect(st *Styles, effect string) string {
	switch effect {
	case simulate.EffectSaved, simulate.EffectContained:
		return st.OK.Render(effect)
	case simulate.EffectWouldSave, simulate.EffectWouldContain:
		return st.Warn.Render(effect)
	}
	return st.Muted.Render(effect)
}

func leaseText(l simulate.LeaseReport) string {
	s := fmtMS(l.LeaseMS) + " fixed"
	if l.Renewable {
		s = fmt.Sprintf("%s renewed every %s", fmtMS(l.LeaseMS), fmtMS(l.RenewEveryMS))
		if l.RenewBoundMS > 0 {
			s += ", bound " + fmtMS(l.RenewBoundMS)
		}
	}
	if l.BudgetMS > 0 {
		s += fmt.Sprintf(" (budget %s, %s)", fmtMS(l.BudgetMS), l.Mode)
	}
	return s + fmt.Sprintf(", cancel margin %s", fmtMS(l.MarginMS))
}

func fmtMS(v int64) string { return lockcore.FormatDuration(time.Duration(v) * time.Millisecond) }

// timelineRows is the pure row builder of the timeline table.
func timelineRows(res simulate.Result) ([]string, [][]string) {
	header := []string{"time", "actor", "event", "ok", "lock", "store", "note"}
	rows := make([][]string, 0, len(res.Events))
	steps := res.History().Steps
	for i, e := range res.Events {
		at := fmtMS(e.AtMS)
		kind := e.Kind
		if e.Count > 1 {
			at += "…" + fmtMS(e.UntilMS)
			kind += " ×" + strconv.Itoa(e.Count)
		}
		ok := "ok"
		if !e.OK {
			ok = "no"
		}
		lock := "-"
		if e.Lock != nil {
			lock = fmt.Sprintf("%s %s #%d", e.Lock.Holder, fmtMS(e.Lock.PTTLMS), e.Lock.Fence)
		}
		store := "-"
		if e.StoreFence > 0 {
			store = "#" + strconv.FormatInt(e.StoreFence, 10)
		}
		row := []string{at, e.Actor, kind, ok, lock, store, e.Note}
		if res.Nodes > 1 {
			row = slices.Insert(row, 5, nodesCell(steps[i].Nodes))
		}
		rows = append(rows, row)
	}
	if res.Nodes > 1 {
		header = slices.Insert(header, 5, "nodes")
	}
	return header, rows
}

// nodesCell is each Redlock node's holder after an event, in node order:
// the holder's name, · when free, x when down.
func nodesCell(nodes []history.Node) string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		switch {
		case n.Down:
			out[i] = "x"
		case n.Holder == "":
			out[i] = "·"
		default:
			out[i] = n.Holder
		}
	}
	return strings.Join(out, " ")
}

// nodesText is "node 3" or "nodes 1, 2" for 1-based node numbers.
func nodesText(ks []int) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = strconv.Itoa(k)
	}
	if len(ks) == 1 {
		return "node " + s[0]
	}
	return "nodes " + strings.Join(s, ", ")
}

// listTable renders `lockctl simulate --list`: one row per built-in
// scenario.
func listTable(t *TableView, res SimulateListResult) {
	rows := make([][]string, 0, len(res.Scenarios))
	for _, b := range res.Scenarios {
		guard, safe := b.Guard, "unsafe"
		if guard == "" {
			guard = "-"
		}
		if b.SafeGuarded {
			safe = "safe"
		}
		rows = append(rows, []string{b.Name, safe, guard, b.Description})
	}
	t.Table([]string{"scenario", "all guards", "its guard", "what happens"}, rows)
}
