package simulate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/history"
)

// History is the run as the renderers draw it: every event a step (a call
// of the lock, the store or the receiver, else a note), the lock's holder
// after it, and the violations.
func (r Result) History() history.Run {
	run := history.Run{Title: r.Scenario, Verdict: r.Verdict, EndMS: r.EndMS, Actors: r.Actors, Nodes: r.Nodes, Lanes: r.Lanes}
	lock := "Redis"
	if r.Nodes > 1 {
		lock = "Redlock, " + strconv.Itoa(r.Nodes) + " nodes"
	}
	run.Servers = []history.Server{{Role: history.ServerLock, Name: lock}, {Role: history.ServerStore, Name: "Store"}}
	if slices.ContainsFunc(r.Events, func(e Event) bool { return e.Kind == "send" }) {
		run.Servers = append(run.Servers, history.Server{Role: history.ServerReceiver, Name: "Receiver"})
	}
	run.Steps = make([]history.Step, 0, len(r.Events))
	for _, e := range r.Events {
		run.Steps = append(run.Steps, r.step(e))
	}
	for _, v := range r.Violations {
		run.Violations = append(run.Violations, history.Violation{Code: v.Code, AtMS: v.AtMS, Actor: v.Actor, Detail: v.Message})
	}
	return run
}

// faultKinds are the event kinds a scenario's faults add (scenario.go's actions).
var faultKinds = map[string]bool{"pause": true, "partition": true, "crash": true, "failover": true, "clock_jump": true, "restart": true}

// step is event e as drawn: acquire, renew and release call the lock,
// write the store, send the receiver; the lock's own events (expiry,
// failover, clock jump, a Redlock node's) are notes over it.
func (r Result) step(e Event) history.Step {
	s := history.Step{AtMS: e.AtMS, Actor: e.Actor, Text: strings.ReplaceAll(e.Kind, "_", " ") + ": " + e.Note}
	if faultKinds[e.Kind] {
		s.Fault = e.Kind
	}
	if e.Lock != nil {
		s.Holder = e.Lock.Holder
	}
	for _, n := range e.Nodes {
		s.Nodes = append(s.Nodes, history.Node{Holder: n.Holder, Down: n.Down})
	}
	switch {
	case r.Nodes > 1 && e.Actor == "redis":
		s.Actor, s.Server = "", history.ServerLock
	case e.Kind == "acquire", e.Kind == "renew", e.Kind == "release":
		verb := map[string]string{"acquire": "SET NX PX " + fmtMS(r.Lease.LeaseMS), "renew": "PEXPIRE", "release": "DEL"}[e.Kind]
		if r.Nodes > 1 {
			verb += " on every node"
		}
		if e.Count > 1 {
			verb += fmt.Sprintf(" ×%d until %s", e.Count, fmtMS(e.UntilMS))
		}
		s.Server, s.Text, s.Reply, s.Refused = history.ServerLock, verb, e.Note, !e.OK
		if e.OK && e.Kind == "acquire" && r.Nodes <= 1 {
			s.Reply, s.Fence = fmt.Sprintf("OK, fence %d", e.Fence), e.Fence
		}
	case e.Kind == "write":
		s.Server, s.Text, s.Reply, s.Refused, s.Fence = history.ServerStore, fmt.Sprintf("write, fence %d", e.Fence), e.Note, !e.OK, e.Fence
	case e.Kind == "send":
		s.Server, s.Text, s.Reply = history.ServerReceiver, "send", e.Note
	case e.Kind == "expire", e.Kind == "failover", e.Kind == "clock_jump":
		s.Actor, s.Server, s.Text = "", history.ServerLock, e.Kind+": "+e.Note
	}
	return s
}
