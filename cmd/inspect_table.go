package cmd

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/inspect"
)

// The inspect table's row builder and what follows the table.

func inspectTable(t *TableView, rep inspect.Report, summary bool) {
	cols, rows := inspectRows(rep.Locks)
	var dropped []string
	if len(rows) > 0 {
		dropped = t.Objects(cols, rows)
	}
	inspectDetails(t, rep, dropped, summary)
}

// inspectDetails writes what follows the table: a line per lock of what
// the table left out and the holder's details, the findings, the summary.
func inspectDetails(t *TableView, rep inspect.Report, dropped []string, summary bool) {
	st := t.Styles()
	for _, l := range rep.Locks {
		d := leftOutLine(l, dropped)
		if h := holderLine(l); h != "" {
			d = strings.TrimPrefix(d+", "+oneLineText(h), ", ")
		}
		if d != "" {
			t.Line("%s: %s", oneLineText(l.Key), d)
		}
		if d := sharedLine(l); d != "" {
			t.Line("%s: %s", oneLineText(l.Key), d)
		}
	}
	for _, l := range rep.Locks {
		for _, f := range l.Findings {
			t.Line("%s %s %s: %s; %s", st.Level(string(f.Severity)), f.Code, oneLineText(l.Key), oneLineText(f.Message), f.Reason)
		}
	}
	if summary {
		t.Line("%s", summaryLine(rep.Summary))
	}
}

// inspectColumns are the inspect table's columns; a narrow terminal keeps
// KEY, TTL, LAYOUT and FINDINGS longest (issue 32).
var inspectColumns = []Column{
	{Name: "key", Rank: 0, Shorten: true}, {Name: "type", Rank: 6}, {Name: "ttl", Rank: 1},
	{Name: "expires at", Rank: 7}, {Name: "layout", Rank: 2}, {Name: "owner", Rank: 4},
	{Name: "fence", Rank: 5}, {Name: "findings", Rank: 3},
}

// leftOutLine prints whole what the table could not: the owner token when
// its column was left out or cut at 40 characters, the fence when its
// column was left out; "" when nothing was. Already one-line text.
func leftOutLine(l inspect.Lock, dropped []string) string {
	var parts []string
	owner := oneLineText(l.Owner)
	if owner == "" && l.OwnerHex != "" {
		owner = "hex:" + l.OwnerHex
	}
	if owner != "" && (slices.Contains(dropped, "OWNER") || len([]rune(owner)) > ownerCellRunes) {
		parts = append(parts, "owner "+owner)
	}
	if l.Fence != nil && slices.Contains(dropped, "FENCE") {
		parts = append(parts, "fence "+fenceCell(l.Fence))
	}
	return strings.Join(parts, ", ")
}

// ownerCellRunes is the most of an owner token the OWNER cell shows.
const ownerCellRunes = 40

// inspectRows is the pure row builder of the inspect table.
func inspectRows(locks []inspect.Lock) ([]Column, [][]string) {
	header := inspectColumns
	rows := make([][]string, 0, len(locks))
	for _, l := range locks {
		ttl := "-"
		switch {
		case l.PTTLMS >= 0:
			ttl = inspect.FormatTTL(l.PTTLMS)
		case l.PTTLMS == -1:
			ttl = "none"
		}
		exp := "-"
		if l.ExpiresAt != nil {
			exp = *l.ExpiresAt
		}
		layout := "-"
		switch {
		case l.Role != "":
			layout = l.Layout.Name + " " + l.Role
		case l.Exists:
			layout = l.Layout.Label() + " (" + string(l.Layout.Confidence) + ")"
		}
		owner := oneLineText(l.Owner)
		if owner == "" && l.OwnerHex != "" {
			owner = "hex:" + l.OwnerHex
		}
		if r := []rune(owner); len(r) > ownerCellRunes {
			owner = string(r[:ownerCellRunes-1]) + "…"
		}
		if owner == "" {
			owner = "-"
		}
		codes := make([]string, len(l.Findings))
		for i, f := range l.Findings {
			codes[i] = f.Code
		}
		findings := strings.Join(codes, ",")
		if findings == "" {
			findings = "-"
		}
		rows = append(rows, []string{oneLineText(l.Key), l.Type, ttl, exp, layout, owner, fenceCell(l.Fence), findings})
	}
	return header, rows
}

func fenceCell(f *inspect.Fence) string {
	if f == nil {
		return "-"
	}
	n := func(p *int64) string {
		if p == nil {
			return "?"
		}
		return strconv.FormatInt(*p, 10)
	}
	return n(f.Value) + "/" + n(f.Counter)
}

// holderLine lists what the layout says about the holder.
func holderLine(l inspect.Lock) string {
	var parts []string
	if h := l.Holder; h != nil {
		for _, kv := range [][2]string{{"host", h.Host}, {"client", h.ClientID}, {"thread", h.Thread}, {"job", h.JobID},
			{"mode", h.Mode}, {"metadata", h.Metadata}, {"acquired", h.AcquiredAt}, {"value expires", h.ValueExpiresAt}} {
			if kv[1] != "" {
				parts = append(parts, kv[0]+" "+kv[1])
			}
		}
		if h.PID != 0 {
			parts = append(parts, "pid "+strconv.FormatInt(h.PID, 10))
		}
	}
	if l.HoldCount != nil {
		parts = append(parts, "hold count "+strconv.FormatInt(*l.HoldCount, 10))
	}
	if l.Fence != nil && l.Fence.CounterKey != "" {
		parts = append(parts, "fence counter "+l.Fence.CounterKey)
	}
	if len(l.Waiters) > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting: %s", len(l.Waiters), strings.Join(l.Waiters, ", ")))
	}
	if l.OwnerCheck != "" {
		parts = append(parts, l.OwnerCheck)
	}
	return strings.Join(parts, ", ")
}

// plural is "1 lock" or "n locks".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func summaryLine(s inspect.Summary) string {
	line := plural(s.Locks, "lock", "locks")
	if s.Companions > 0 {
		line += " (+" + plural(s.Companions, "companion key", "companion keys") + ")"
	}
	if s.Interrupted {
		line += " (interrupted: partial)"
	}
	if len(s.ByLayout) > 0 {
		line += "; layouts: " + countList(s.ByLayout)
	}
	if len(s.ByFinding) > 0 {
		line += "; findings: " + countList(s.ByFinding)
	}
	return line
}

func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
