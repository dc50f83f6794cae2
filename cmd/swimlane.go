package cmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/lockctl/lockctl/history"
)

// The swimlane of the table printers of simulate and trial: one row per
// holder over time, the lock's holder and each Redlock node's.

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
func swimlane(st *Styles, run history.Run, width int) []string {
	end := max(run.EndMS, 1)
	from := func(c int) int64 { return end * int64(c) / int64(width) }
	axis := fmt.Sprintf("%s0%s%s", strings.Repeat(" ", laneLabelWidth), strings.Repeat(" ", max(width-1-len(fmtMS(end)), 1)), fmtMS(end))
	out := []string{axis}
	for _, lane := range run.Lanes {
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
		for _, s := range run.Steps {
			if s.AtMS > t {
				break
			}
			holder = "·"
			if s.Holder != "" {
				holder = s.Holder[:1]
			}
		}
		lock.WriteString(holder)
	}
	out = append(out, lock.String())
	out = append(out, nodeLanes(st, run, width, from)...)
	out = append(out, st.Muted.Render("legend: █ working with the lock  ▓ working without it  ░ paused  ~ cut off from Redis  = blocking call  x crashed  · lock free"))
	return out
}

// nodeLanes draws one row per Redlock node (none with one server): the
// first letter of its key's holder over time, · when free, x when down.
func nodeLanes(st *Styles, run history.Run, width int, from func(int) int64) []string {
	if run.Nodes <= 1 {
		return nil
	}
	out := make([]string, 0, run.Nodes)
	for k := range run.Nodes {
		var b strings.Builder
		b.WriteString(st.Lane.Label.Render("n" + strconv.Itoa(k+1)))
		for c := range width {
			t := (from(c) + from(c+1)) / 2
			ch := "·"
			for _, s := range run.Steps {
				if s.AtMS > t {
					break
				}
				switch n := s.Nodes[k]; {
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
func laneChar(st *Styles, lane history.Lane, from, to int64) (string, *lipgloss.Style) {
	best, ch, style := 0, " ", (*lipgloss.Style)(nil)
	for _, s := range lane.Segments {
		if s.ToMS <= from || s.FromMS >= to {
			continue
		}
		rank, c, sty := 0, " ", (*lipgloss.Style)(nil)
		switch {
		case s.State == history.LaneCrashed:
			rank, c, sty = 7, "x", &st.Lane.Crashed
		case s.State == history.LaneIdle:
		case s.State == history.LanePaused:
			rank, c, sty = 2, "░", &st.Lane.Paused
		case !s.Holds:
			rank, c, sty = 6, "▓", &st.Lane.Lost
		case s.State == history.LaneWorking:
			rank, c, sty = 5, "█", &st.Lane.Holding
		case s.State == history.LaneCall:
			rank, c, sty = 4, "=", &st.Lane.Call
		case s.State == history.LanePartitioned:
			rank, c, sty = 3, "~", &st.Lane.Partitioned
		}
		if rank > best {
			best, ch, style = rank, c, sty
		}
	}
	return ch, style
}
