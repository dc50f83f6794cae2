package cmd

import (
	"fmt"
	"strings"

	"github.com/lockctl/lockctl/simulate"
)

// The Mermaid printer of `lockctl simulate -o mermaid`: a run as a sequence
// diagram.

// mermaid renders a run as a Mermaid sequence diagram for a postmortem.
func mermaid(res simulate.Result) string {
	var b strings.Builder
	clean := func(s string) string {
		return strings.NewReplacer(";", ",", "#", "no. ", "\n", " ").Replace(s)
	}
	line := func(format string, args ...any) { fmt.Fprintf(&b, "    "+format+"\n", args...) }
	b.WriteString("sequenceDiagram\n")
	line("title %s: %s", clean(res.Scenario), res.Verdict)
	for _, a := range res.Actors {
		if id := mermaidID(a); id != a {
			line("participant %s as %s", id, a)
		} else {
			line("participant %s", a)
		}
	}
	if res.Nodes > 1 {
		line("participant R as Redlock, %d nodes", res.Nodes)
	} else {
		line("participant R as Redis")
	}
	line("participant S as Store")
	hasSend := false
	for _, e := range res.Events {
		if e.Kind == "send" {
			hasSend = true
		}
	}
	if hasSend {
		line("participant X as Receiver")
	}
	prevNodes := nodesCell(make([]simulate.NodeView, max(res.Nodes, 0))) // all free at the start
	for _, e := range res.Events {
		at := fmtMS(e.AtMS)
		note := clean(e.Note)
		switch {
		case res.Nodes > 1 && e.Actor == "redis": // a node's crash, restart, failover, clock jump or expiry
			line("Note over R: %s %s: %s", at, strings.ReplaceAll(e.Kind, "_", " "), note)
		case e.Kind == "acquire", e.Kind == "renew", e.Kind == "release":
			verb := map[string]string{"acquire": "SET NX PX " + fmtMS(res.Lease.LeaseMS), "renew": "PEXPIRE", "release": "DEL"}[e.Kind]
			if res.Nodes > 1 {
				verb += " on every node"
			}
			if e.Count > 1 {
				verb += fmt.Sprintf(" ×%d until %s", e.Count, fmtMS(e.UntilMS))
			}
			line("%s->>R: %s %s", mermaidID(e.Actor), at, verb)
			arrow := "R-->>%s: %s"
			if !e.OK {
				arrow = "R--x%s: %s"
			} else if e.Kind == "acquire" && res.Nodes <= 1 {
				note = fmt.Sprintf("OK, fence %d", e.Fence)
			}
			line(arrow, mermaidID(e.Actor), note)
		case e.Kind == "write":
			line("%s->>S: %s write, fence %d", mermaidID(e.Actor), at, e.Fence)
			arrow := "S-->>%s: %s"
			if !e.OK {
				arrow = "S--x%s: %s"
			}
			line(arrow, mermaidID(e.Actor), note)
		case e.Kind == "send":
			line("%s->>X: %s send", mermaidID(e.Actor), at)
			line("X-->>%s: %s", mermaidID(e.Actor), note)
		case e.Kind == "expire", e.Kind == "failover", e.Kind == "clock_jump":
			line("Note over R: %s %s: %s", at, e.Kind, note)
		default:
			line("Note over %s: %s %s: %s", mermaidID(e.Actor), at, strings.ReplaceAll(e.Kind, "_", " "), note)
		}
		if nodes := nodesCell(e.Nodes); res.Nodes > 1 && nodes != prevNodes {
			line("Note over R: nodes %s", nodes)
			prevNodes = nodes
		}
	}
	for _, v := range res.Violations {
		line("Note over %s: %s at %s: %s", mermaidID(v.Actor), v.Code, fmtMS(v.AtMS), clean(v.Message))
	}
	return b.String()
}

// mermaidID is the participant id of actor a: a itself, unless it is the
// id of another participant (R, S, X) or a word Mermaid's sequence diagrams
// take as a keyword (an actor named "end" closes a block that was never
// opened, and the diagram does not render); then P_a, shown as a. An actor
// whose name starts with P_ gets P_ too, so that P_R is not R's id.
func mermaidID(a string) string {
	if strings.HasPrefix(a, "P_") {
		return "P_" + a
	}
	switch strings.ToLower(a) {
	case "r", "s", "x", "participant", "actor", "as", "loop", "alt", "else", "opt", "par", "and", "rect", "end",
		"critical", "option", "break", "note", "over", "left", "right", "of", "activate", "deactivate",
		"autonumber", "title", "box", "create", "destroy", "link", "links", "properties", "details", "accdescr", "acctitle":
		return "P_" + a
	}
	return a
}
