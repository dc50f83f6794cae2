package cmd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
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
	for _, l := range swimlane(st, res, laneWidth(t.Width())) {
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
	for _, e := range res.Events {
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
			row = slices.Insert(row, 5, nodesCell(e.Nodes))
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
func nodesCell(nodes []simulate.NodeView) string {
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

// laneWidth is the swimlane's width in columns: 60, or fewer (at least 10)
// to fit beside the labels on a terminal width columns wide (0: no limit).
func laneWidth(width int) int {
	if width <= 0 {
		return 60
	}
	return max(min(60, width-laneLabelWidth), 10)
}

// swimlane draws one lane per actor over width columns plus the lock's
// holder, with a legend: █ working with the lock, ▓ working without it,
// ░ paused, ~ cut off from Redis, = in a blocking call, x crashed.
func swimlane(st *Styles, res simulate.Result, width int) []string {
	end := max(res.EndMS, 1)
	from := func(c int) int64 { return end * int64(c) / int64(width) }
	axis := fmt.Sprintf("%s0%s%s", strings.Repeat(" ", laneLabelWidth), strings.Repeat(" ", max(width-1-len(fmtMS(end)), 1)), fmtMS(end))
	out := []string{axis}
	for _, lane := range res.Lanes {
		var b strings.Builder
		b.WriteString(st.Lane.Label.Render(lane.Actor))
		run, runStyle := "", (*lipgloss.Style)(nil)
		flush := func() {
			if run != "" && runStyle != nil {
				b.WriteString(runStyle.Render(run))
			} else {
				b.WriteString(run)
			}
			run = ""
		}
		for c := range width {
			ch, style := laneChar(st, lane, from(c), max(from(c+1), from(c)+1))
			if style != runStyle {
				flush()
				runStyle = style
			}
			run += ch
		}
		flush()
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	var lock strings.Builder
	lock.WriteString(st.Lane.Label.Render("lock"))
	for c := range width {
		t := (from(c) + from(c+1)) / 2
		holder := "·"
		for _, e := range res.Events {
			if e.AtMS > t {
				break
			}
			holder = "·"
			if e.Lock != nil {
				holder = e.Lock.Holder[:1]
			}
		}
		lock.WriteString(holder)
	}
	out = append(out, lock.String())
	out = append(out, nodeLanes(st, res, width, from)...)
	out = append(out, st.Muted.Render("legend: █ working with the lock  ▓ working without it  ░ paused  ~ cut off from Redis  = blocking call  x crashed  · lock free"))
	return out
}

// nodeLanes draws one row per Redlock node (none with one server): the
// first letter of its key's holder over time, · when free, x when down.
func nodeLanes(st *Styles, res simulate.Result, width int, from func(int) int64) []string {
	if res.Nodes <= 1 {
		return nil
	}
	out := make([]string, 0, res.Nodes)
	for k := range res.Nodes {
		var b strings.Builder
		b.WriteString(st.Lane.Label.Render("n" + strconv.Itoa(k+1)))
		for c := range width {
			t := (from(c) + from(c+1)) / 2
			ch := "·"
			for _, e := range res.Events {
				if e.AtMS > t {
					break
				}
				switch n := e.Nodes[k]; {
				case n.Down:
					ch = "x"
				case n.Holder == "":
					ch = "·"
				default:
					ch = n.Holder[:1]
				}
			}
			b.WriteString(ch)
		}
		out = append(out, b.String())
	}
	return out
}

// laneChar is the most telling state of a lane in [from, to): crashed, then
// working without the lock, then working, call, cut off, paused, idle.
func laneChar(st *Styles, lane simulate.Lane, from, to int64) (string, *lipgloss.Style) {
	best, ch, style := 0, " ", (*lipgloss.Style)(nil)
	for _, s := range lane.Segments {
		if s.ToMS <= from || s.FromMS >= to {
			continue
		}
		rank, c, sty := 0, " ", (*lipgloss.Style)(nil)
		switch {
		case s.State == simulate.LaneCrashed:
			rank, c, sty = 7, "x", &st.Lane.Crashed
		case s.State == simulate.LaneIdle:
		case s.State == simulate.LanePaused:
			rank, c, sty = 2, "░", &st.Lane.Paused
		case !s.Holds:
			rank, c, sty = 6, "▓", &st.Lane.Lost
		case s.State == simulate.LaneWorking:
			rank, c, sty = 5, "█", &st.Lane.Holding
		case s.State == simulate.LaneCall:
			rank, c, sty = 4, "=", &st.Lane.Call
		case s.State == simulate.LanePartitioned:
			rank, c, sty = 3, "~", &st.Lane.Partitioned
		}
		if rank > best {
			best, ch, style = rank, c, sty
		}
	}
	return ch, style
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
