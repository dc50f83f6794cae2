package cmd

import (
	"fmt"
	"strings"

	"github.com/lockctl/lockctl/history"
)

// The Mermaid printer of `-o mermaid` (simulate and trial): a run's
// history as a sequence diagram for a postmortem.

// mermaidServers are the participant ids of the servers, by role.
var mermaidServers = map[string]string{history.ServerLock: "R", history.ServerStore: "S", history.ServerReceiver: "X"}

// mermaid renders a run as a Mermaid sequence diagram: the actors and the
// servers, each step as a call (with the server's reply) or a note, the
// Redlock nodes' holders whenever they change, then the violations.
func mermaid(run history.Run) string {
	var b strings.Builder
	clean := strings.NewReplacer(";", ",", "#", "no. ", "\n", " ").Replace
	line := func(format string, args ...any) { fmt.Fprintf(&b, "    "+format+"\n", args...) }
	over := func(actor, server string) string {
		if actor != "" {
			return mermaidID(actor)
		}
		return mermaidServers[server]
	}
	b.WriteString("sequenceDiagram\n")
	line("title %s: %s", clean(run.Title), run.Verdict)
	for _, a := range run.Actors {
		if id := mermaidID(a); id != a {
			line("participant %s as %s", id, a)
		} else {
			line("participant %s", a)
		}
	}
	for _, s := range run.Servers {
		line("participant %s as %s", mermaidServers[s.Role], s.Name)
	}
	prevNodes := nodesCell(make([]history.Node, max(run.Nodes, 0))) // all free at the start
	for _, s := range run.Steps {
		at := fmtMS(s.AtMS)
		switch {
		case s.Actor != "" && s.Server != "":
			line("%s->>%s: %s %s", mermaidID(s.Actor), mermaidServers[s.Server], at, clean(s.Text))
			if s.Reply != "" {
				arrow := "%s-->>%s: %s"
				if s.Refused {
					arrow = "%s--x%s: %s"
				}
				line(arrow, mermaidServers[s.Server], mermaidID(s.Actor), clean(s.Reply))
			}
		default:
			line("Note over %s: %s %s", over(s.Actor, s.Server), at, clean(s.Text))
		}
		if nodes := nodesCell(s.Nodes); run.Nodes > 1 && nodes != prevNodes {
			line("Note over R: nodes %s", nodes)
			prevNodes = nodes
		}
	}
	for _, v := range run.Violations {
		line("Note over %s: %s at %s: %s", over(v.Actor, v.Server), v.Code, fmtMS(v.AtMS), clean(v.Detail))
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
