package cmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/diagnose"
	"github.com/lockctl/lockctl/inspect"
)

// diagnoseTable is the table format of diagnose: the procedure's three
// steps, then the advice.
func diagnoseTable(t *TableView, rep diagnose.Report) {
	st := t.Styles()
	oh := rep.OldHolder
	t.Title("1. The old holder")
	if len(oh.Processes) == 0 {
		t.Line("no local process found")
	}
	for _, p := range oh.Processes {
		t.Line("%s", processLine(p))
		if c := p.ExternalCall; c != nil {
			t.Line("  external call: %s", externalLine(c))
		}
		if len(p.Threads) > 0 {
			t.Table(threadRows(p.Threads))
		}
		if len(p.Connections) > 0 {
			t.Table(connRows(p.Connections))
		}
		if len(p.Unreadable) > 0 {
			t.Line("  could not read: %s", strings.Join(p.Unreadable, "; "))
		}
	}
	if len(oh.Clients) > 0 {
		t.Line("Redis side (CLIENT LIST):")
		t.Table(clientRows(oh.Clients))
	}
	for _, n := range oh.Notes {
		t.Line("note: %s", n)
	}
	t.Line("")
	t.Title("2. The current lease")
	inspectTable(t, inspect.NewReport([]inspect.Lock{rep.Lease}), false)
	t.Line("")
	t.Title("3. The write boundary")
	b := rep.Boundary
	t.Line("%s: %s", verdictText(st, b.Verdict), b.Reason)
	t.Line("%s", boundaryFacts(b))
	t.Line("")
	t.Line("advice: %s", oneLineText(rep.Advice))
}

// verdictText is the verdict in capitals, coloured as an error
// (accepted), a warning (unknown) or good news (refused).
func verdictText(st *Styles, v string) string {
	switch v {
	case diagnose.Accepted:
		return st.Error.Render(strings.ToUpper(v))
	case diagnose.Unknown:
		return st.Warn.Render(strings.ToUpper(v))
	}
	return st.OK.Render(strings.ToUpper(v))
}

func processLine(p diagnose.Process) string {
	s := fmt.Sprintf("pid %d (%s), parent %d, %s, alive %s", p.PID, oneLineText(p.Comm), p.PPID, p.State, durText(p.AgeMS))
	if r := p.Run; r != nil {
		fence := "none"
		if r.Fence != nil {
			fence = strconv.FormatInt(*r.Fence, 10)
		}
		s += fmt.Sprintf("; lockctl run child: LOCKCTL_KEY %s, LOCKCTL_FENCE %s", oneLineText(r.Key), fence)
	}
	return s
}

func externalLine(c *diagnose.ExternalCall) string {
	s := c.Peer
	if c.Redis {
		s += " (Redis)"
	}
	how := c.How
	if c.TID != 0 {
		how = fmt.Sprintf("thread %d in %s on fd %d", c.TID, c.How, c.FD)
	} else if c.How == "only_connection" {
		how = "its one established connection while its threads wait (likely)"
	}
	s += ", " + how
	if c.OffCPUMS != nil {
		s += ", off CPU " + durText(*c.OffCPUMS)
	}
	return s + fmt.Sprintf(", send-q %d, recv-q %d", c.SendQueue, c.RecvQueue)
}

// threadRows is the pure row builder of a process's threads.
func threadRows(ts []diagnose.Thread) ([]string, [][]string) {
	rows := make([][]string, 0, len(ts))
	for _, t := range ts {
		sc := orDash(t.Syscall)
		if t.FD != nil {
			sc += " fd " + strconv.Itoa(*t.FD)
		}
		off := "-"
		if t.OffCPUMS != nil {
			off = durText(*t.OffCPUMS)
		}
		rows = append(rows, []string{strconv.Itoa(t.TID), oneLineText(t.Comm), t.State, orDash(t.WChan), sc, off})
	}
	return []string{"tid", "comm", "state", "wchan", "syscall", "off cpu"}, rows
}

// connRows is the pure row builder of a process's TCP connections.
func connRows(cs []diagnose.Conn) ([]string, [][]string) {
	rows := make([][]string, 0, len(cs))
	for _, c := range cs {
		peer := c.Peer
		if c.Redis {
			peer += " (Redis)"
		}
		rows = append(rows, []string{strconv.Itoa(c.FD), c.Local, peer, c.State, strconv.FormatInt(c.SendQueue, 10), strconv.FormatInt(c.RecvQueue, 10)})
	}
	return []string{"fd", "local", "peer", "state", "send-q", "recv-q"}, rows
}

// clientRows is the pure row builder of the Redis side.
func clientRows(cs []diagnose.Client) ([]string, [][]string) {
	rows := make([][]string, 0, len(cs))
	for _, c := range cs {
		pid := "not local"
		if c.PID != nil {
			pid = strconv.Itoa(*c.PID)
		}
		lib := strings.TrimSpace(c.LibName + " " + c.LibVer)
		rows = append(rows, []string{strconv.FormatInt(c.ID, 10), c.Addr, pid, orDash(oneLineText(c.Name)),
			durText(c.AgeS * 1000), durText(c.IdleS * 1000), orDash(c.Cmd), orDash(oneLineText(lib))})
	}
	return []string{"id", "addr", "pid", "name", "age", "idle", "cmd", "lib"}, rows
}

// boundaryFacts lists the fences compared.
func boundaryFacts(b diagnose.Boundary) string {
	n := func(p *int64) string {
		if p == nil {
			return "none"
		}
		return strconv.FormatInt(*p, 10)
	}
	from := map[string]string{"flag": "--fence", "old_value": "--old-value", "environ": "LOCKCTL_FENCE"}[b.FenceFrom]
	s := "old holder's fence " + n(b.Fence)
	if from != "" {
		s += " (" + from
		if b.PID != nil {
			s += ", pid " + strconv.Itoa(*b.PID)
		}
		s += ")"
	}
	s += ", lease's fence " + n(b.LeaseFence)
	if b.Store != "" {
		s += ", store (" + b.Store + ") newest " + n(b.StoreFence)
	}
	if b.Stale != nil {
		s += map[bool]string{true: "; stale: it no longer holds the lease", false: "; it holds the current lease"}[*b.Stale]
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// durText is a duration in ms for the report, to the second from 1s.
func durText(ms int64) string {
	if ms >= 1000 {
		ms = (ms + 500) / 1000 * 1000
	}
	return msText(ms)
}
