package simulate

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/yamlschema"
	"github.com/lockctl/lockctl/lockcore"
	"go.yaml.in/yaml/v3"
)

//go:embed scenario.schema.json
var schemaJSON []byte

// Schema returns the JSON Schema (draft 2020-12) of scenario files, as
// printed by `lockctl simulate schema`.
func Schema() []byte { return slices.Clone(schemaJSON) }

// fileSchema validates scenario files; it compiles on first use.
var fileSchema = yamlschema.NewSchema(schemaJSON, nil)

// fileLimits bound what a scenario file's YAML may expand to (aliases):
// 10000 events of a few fields each fit well within them.
var fileLimits = yamlschema.Limits{MaxValues: 100000, MaxDepth: 50}

// FileError is an error in a scenario file: the line (1-based), the field
// ("events[2].for", JSON-path style with 0-based indexes) and what is wrong.
type FileError struct {
	Line  int
	Field string
	Msg   string
}

// Error is "line N: field: message".
func (e *FileError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("line %d: %s: %s", e.Line, e.Field, e.Msg)
}

// MaxFileSize is the largest scenario file ParseFile reads, in bytes (1 MiB):
// parsing YAML takes about 100 times the file's size in memory.
const MaxFileSize = 1 << 20

// ParseFile reads a scenario file (YAML, the schema of Schema). It validates
// the document against the JSON Schema, then checks what the schema cannot
// (durations, which fields each action takes). Every error is a *FileError
// naming the line and the field; of several, the first by line.
func ParseFile(data []byte) (Scenario, error) {
	if len(data) > MaxFileSize {
		return Scenario{}, &FileError{Line: 1, Msg: fmt.Sprintf("the file is over %d bytes; a scenario of at most 10000 events fits well within that", MaxFileSize)}
	}
	doc, err := yamlschema.Parse(data, fileLimits)
	var syn *yamlschema.SyntaxError
	var probs yamlschema.Problems
	switch {
	case errors.As(err, &syn):
		return Scenario{}, &FileError{Line: syn.Line, Msg: "not valid YAML: " + syn.Msg}
	case errors.Is(err, yamlschema.ErrEmpty):
		return Scenario{}, &FileError{Line: 1, Msg: "the file is empty; it needs name, policy and events"}
	case errors.As(err, &probs):
		return Scenario{}, fileError(doc, probs[0])
	case err != nil:
		return Scenario{}, err
	}
	probs, err = fileSchema.Validate(doc)
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario %w", err)
	}
	if len(probs) > 0 {
		return Scenario{}, fileError(doc, probs[0])
	}
	return decode(doc)
}

// fileError words a problem as a *FileError; doc is nil for problems Parse
// found.
func fileError(doc *yamlschema.Document, p yamlschema.Problem) *FileError {
	fe := &FileError{Line: p.Line, Field: p.Field()}
	text := "the value"
	if doc != nil {
		if n := doc.Node(p.Path); n != nil && n.Kind == yaml.ScalarNode {
			text = strconv.Quote(n.Value)
		}
	}
	if msg, ok := p.ParseMessage("scenario", fileLimits); ok { // "size": Parse puts it on the top-level field
		fe.Msg = msg
		return fe
	}
	switch p.Keyword {
	case "additionalProperties":
		fe.Msg = "unknown field; accepted: " + strings.Join(fileSchema.Properties(p.Path[:len(p.Path)-1]), ", ")
	case "minItems":
		fe.Msg = "needs at least one " + itemNoun(p.Path)
	case "maxItems":
		n, _ := p.Value.([]any)
		fe.Msg = fmt.Sprintf("has %d %ss; at most %v", len(n), itemNoun(p.Path), p.Params["max_items"])
		if itemNoun(p.Path) == "event" {
			fe.Msg += " (a longer run needs more memory than a scenario is worth)"
		}
	case "required":
		fe.Msg = "missing " + strings.Join(p.Names, ", ")
	case "enum":
		fe.Msg = fmt.Sprintf("%s is not one of %v", text, p.Params["expected"])
	case "pattern":
		s, _ := p.Value.(string)
		if !isDurationField(p.Path) {
			fe.Msg = fmt.Sprintf("%q must start with a letter and have at most 16 letters, digits, _ or -", s)
			break
		}
		// What ParseDuration takes and the pattern does not: a sign, spaces, "1.s".
		d, err := lockcore.ParseDuration(s)
		switch {
		case err != nil:
		case d < 0:
			err = fmt.Errorf("%q is negative; times and lengths in a scenario are 0s or more", s)
		default:
			err = fmt.Errorf("%q is not written as a scenario's durations are: digits and a unit, no sign or spaces, such as 30s, 1500ms, 1h30m", s)
		}
		fe.Msg = err.Error()
	case "type":
		if n := doc.Node(p.Path); isDurationField(p.Path) && n != nil && n.Kind == yaml.ScalarNode {
			if _, err := lockcore.ParseDuration(n.Value); err != nil {
				fe.Msg = err.Error()
				break
			}
		}
		want := p.Want()
		if isDurationField(p.Path) {
			want = "a duration such as 30s"
		}
		fe.Msg = fmt.Sprintf("got %s; want %s", p.Got(), want)
	case "minLength":
		fe.Msg = "must not be empty"
	case "minProperties":
		fe.Msg = "needs at least one field; accepted: " + strings.Join(fileSchema.Properties(p.Path), ", ")
	case "minimum":
		fe.Msg = fmt.Sprintf("%v is below %v, the smallest accepted", p.Value, p.Params["minimum"])
	case "maximum":
		fe.Msg = fmt.Sprintf("%v is above %v, the largest accepted", p.Value, p.Params["maximum"])
	default:
		fe.Msg = p.Message
	}
	return fe
}

// isDurationField tells whether the schema makes the value at path a
// duration ($defs/duration).
// itemNoun names what a list field holds: a node of an event's nodes: list,
// else an event (the scenario's events: list).
func itemNoun(path yamlschema.Path) string {
	if len(path) > 0 && path[len(path)-1] == "nodes" {
		return "node"
	}
	return "event"
}

func isDurationField(path yamlschema.Path) bool { return fileSchema.Def(path) == "duration" }

// decode builds the Scenario from a schema-valid document, checking what
// the schema cannot.
func decode(doc *yamlschema.Document) (Scenario, error) {
	root := doc.Root
	sc := Scenario{Guards: AllGuards(), FenceStart: 1, FenceSource: FenceRedis, Check: CheckNone}
	fencingSet, fenceSourceLine := false, 0
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		var err error
		switch k.Value {
		case "name":
			sc.Name = v.Value
		case "description":
			sc.Description = v.Value
		case "policy":
			sc.Policy, err = decodePolicy(v)
		case "guards":
			for j := 0; j+1 < len(v.Content); j += 2 {
				sc.Guards = sc.Guards.With(v.Content[j].Value, v.Content[j+1].Value == "true")
				fencingSet = fencingSet || v.Content[j].Value == "fencing"
			}
		case "fence_start":
			// The schema made it a whole number of at least 1, which YAML
			// may write as 0x10 or 1e3; in decimal digits, only one over
			// 2^63-1 fails here, and it is over MaxFenceStart too.
			sc.FenceStart, err = strconv.ParseInt(v.Value, 10, 64)
			switch {
			case err == nil:
			case strings.Trim(v.Value, "+0123456789") == "":
				err = &FileError{Line: v.Line, Field: "fence_start", Msg: fenceStartError(v.Value).Error()}
			default:
				err = &FileError{Line: v.Line, Field: "fence_start", Msg: fmt.Sprintf("%q: write it in decimal digits, e.g. 17", v.Value)}
			}
		case "fence_source":
			sc.FenceSource, fenceSourceLine = v.Value, v.Line
		case "check":
			sc.Check = v.Value
		case "checkpoints":
			sc.Checkpoints = v.Value == "true"
		case "nodes":
			sc.Nodes, err = nodeNumber(v, "nodes")
		case "replication_lag":
			var d time.Duration
			d, err = duration(v, "replication_lag", true)
			sc.ReplicationLagMS = ms(d)
		case "events":
			last := map[string]Step{} // each actor's last program step so far
			for j, ev := range v.Content {
				st, err := decodeStep(ev, j)
				if err != nil {
					return sc, err
				}
				// An actor's program runs in file order and in time: one
				// listed after a later step of its own would be run first,
				// silently.
				if prev, ok := last[st.Actor]; ok && !st.Do.fault() && st.AtMS < prev.AtMS {
					return sc, &FileError{Line: ev.Line, Field: fmt.Sprintf("events[%d].at", j), Msg: fmt.Sprintf("%s's %s at %s is listed after its %s at %s; list each actor's steps in time order",
						st.Actor, st.Do, fmtMS(st.AtMS), prev.Do, fmtMS(prev.AtMS))}
				}
				if !st.Do.fault() {
					last[st.Actor] = st
				}
				sc.Steps = append(sc.Steps, st)
			}
		}
		if err != nil {
			return sc, err
		}
	}
	if err := sc.checkFenceStart(); err != nil {
		return sc, &FileError{Line: doc.Line(yamlschema.Path{"fence_start"}), Field: "fence_start", Msg: err.Error()}
	}
	if err := decodeNodes(&sc, fencingSet, fenceSourceLine); err != nil {
		return sc, err
	}
	if err := sc.checkHorizon(); err != nil {
		return sc, &FileError{Line: doc.Line(yamlschema.Path{"events"}), Field: "events", Msg: err.Error()}
	}
	if _, err := sc.Policy.resolve(); err != nil {
		return sc, &FileError{Line: doc.Line(yamlschema.Path{"policy"}), Field: "policy", Msg: err.Error()}
	}
	return sc, nil
}

func duration(v *yaml.Node, field string, positive bool) (time.Duration, error) {
	parse := lockcore.ParseDuration
	if positive {
		parse = lockcore.ParsePositiveDuration
	}
	d, err := parse(v.Value)
	if err != nil {
		return 0, &FileError{Line: v.Line, Field: field, Msg: err.Error()}
	}
	return d, nil
}

func decodePolicy(v *yaml.Node) (PolicySpec, error) {
	var ps PolicySpec
	has := map[string]int{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		has[k.Value] = k.Line
		field := "policy." + k.Value
		if k.Value == "mode" {
			ps.Mode = lockcore.Mode(val.Value)
			continue
		}
		d, err := duration(val, field, true)
		if err != nil {
			return ps, err
		}
		switch k.Value {
		case "lease":
			ps.Lease = d
		case "budget":
			ps.Budget = d
		case "renew_every":
			ps.RenewEvery = d
		case "lease_cap":
			ps.LeaseCap = d
		case "renew_bound":
			ps.RenewBound = d
		}
	}
	switch {
	case has["lease"] > 0 && has["budget"] > 0:
		return ps, &FileError{Line: has["budget"], Field: "policy.budget", Msg: "give either lease or budget, not both"}
	case has["lease"] == 0 && has["budget"] == 0:
		return ps, &FileError{Line: v.Line, Field: "policy", Msg: "missing lease or budget"}
	case has["mode"] > 0 && has["lease"] > 0:
		return ps, &FileError{Line: has["mode"], Field: "policy.mode", Msg: "mode goes with budget; a lease is fixed unless renew_every is set"}
	case has["lease_cap"] > 0 && has["lease"] > 0:
		return ps, &FileError{Line: has["lease_cap"], Field: "policy.lease_cap", Msg: "lease_cap goes with budget"}
	}
	return ps, nil
}

// fieldsOf are the optional fields each action takes besides at, actor, do and note.
var fieldsOf = map[Action][]string{
	ActAcquire: {"wait"}, ActWork: {"for"}, ActCall: {"for"}, ActSend: {"key"},
	ActPause: {"for"}, ActPartition: {"for", "node", "nodes"}, ActClockJump: {"by", "node", "nodes"},
	ActCrash: {"node", "nodes"}, ActFailover: {"node", "nodes"}, ActRestart: {"node", "nodes"},
}

func decodeStep(n *yaml.Node, i int) (Step, error) {
	prefix := "events[" + strconv.Itoa(i) + "]"
	st := Step{Line: n.Line}
	lines := map[string]int{}
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		lines[k.Value] = k.Line
		field := prefix + "." + k.Value
		var err error
		var d time.Duration
		switch k.Value {
		case "at":
			d, err = duration(v, field, false)
			if err == nil && d < 0 {
				err = &FileError{Line: v.Line, Field: field, Msg: fmt.Sprintf("%q is before the start", v.Value)}
			}
			st.AtMS = ms(d)
		case "actor":
			st.Actor = v.Value
			if v.Value == serverActor {
				err = &FileError{Line: v.Line, Field: field, Msg: `"redis" is the server's name; pick another actor name`}
			}
		case "do":
			st.Do = Action(v.Value)
		case "for":
			d, err = duration(v, field, true)
			st.ForMS = ms(d)
		case "by":
			d, err = duration(v, field, true)
			st.ByMS = ms(d)
		case "wait":
			d, err = duration(v, field, true)
			st.WaitMS = ms(d)
		case "key":
			st.Key = v.Value
		case "node":
			var k int
			k, err = nodeNumber(v, field)
			st.Nodes = []int{k}
		case "nodes":
			st.Nodes, err = decodeNodeList(v, field)
		case "note":
			st.Note = v.Value
		}
		if err != nil {
			return st, err
		}
	}
	if lines["node"] > 0 && lines["nodes"] > 0 {
		return st, &FileError{Line: lines["nodes"], Field: prefix + ".nodes", Msg: "give node or nodes, not both"}
	}
	for _, f := range []string{"for", "by", "wait", "key", "node", "nodes"} {
		if lines[f] > 0 && !slices.Contains(fieldsOf[st.Do], f) {
			return st, &FileError{Line: lines[f], Field: prefix + "." + f, Msg: fmt.Sprintf("%s takes no %s", st.Do, f)}
		}
	}
	switch {
	case (st.Do == ActWork || st.Do == ActCall || st.Do == ActPause || st.Do == ActPartition) && st.ForMS == 0:
		return st, &FileError{Line: n.Line, Field: prefix, Msg: fmt.Sprintf("%s needs for (a duration)", st.Do)}
	case st.Do == ActClockJump && st.ByMS == 0:
		return st, &FileError{Line: n.Line, Field: prefix, Msg: "clock_jump needs by (a duration)"}
	case st.Do == ActCrash && st.Actor == "" && len(st.Nodes) == 0:
		return st, &FileError{Line: n.Line, Field: prefix, Msg: "crash needs an actor (a process) or node (a Redlock node)"}
	case st.Do != ActFailover && st.Do != ActClockJump && st.Do != ActRestart && st.Do != ActCrash && st.Actor == "":
		return st, &FileError{Line: n.Line, Field: prefix, Msg: fmt.Sprintf("%s needs an actor", st.Do)}
	case st.Do == ActCrash && st.Actor != "" && len(st.Nodes) > 0:
		return st, &FileError{Line: lines["actor"], Field: prefix + ".actor", Msg: "a crash hits an actor (a process) or nodes, not both"}
	case (st.Do == ActFailover || st.Do == ActClockJump || st.Do == ActRestart) && st.Actor != "":
		return st, &FileError{Line: lines["actor"], Field: prefix + ".actor", Msg: fmt.Sprintf("%s happens to the server; it takes no actor", st.Do)}
	}
	return st, nil
}

// MarshalFile writes a scenario as a file ParseFile reads back to the same
// run: durations with units, events in flow style.
func MarshalFile(sc Scenario) ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	add := func(m *yaml.Node, k string, v *yaml.Node) {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }
	dur := func(v int64) *yaml.Node { return str(fmtMS(v)) }
	add(root, "name", str(sc.Name))
	if sc.Description != "" {
		add(root, "description", str(sc.Description))
	}
	pol := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	for _, f := range []struct {
		k string
		d time.Duration
	}{{"lease", sc.Policy.Lease}, {"budget", sc.Policy.Budget}} {
		if f.d > 0 {
			add(pol, f.k, dur(ms(f.d)))
		}
	}
	if sc.Policy.Mode != "" && sc.Policy.Budget > 0 {
		add(pol, "mode", str(string(sc.Policy.Mode)))
	}
	for _, f := range []struct {
		k string
		d time.Duration
	}{{"renew_every", sc.Policy.RenewEvery}, {"lease_cap", sc.Policy.LeaseCap}, {"renew_bound", sc.Policy.RenewBound}} {
		if f.d > 0 {
			add(pol, f.k, dur(ms(f.d)))
		}
	}
	add(root, "policy", pol)
	guards := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	for _, g := range GuardNames {
		add(guards, g, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(sc.Guards.Get(g))})
	}
	add(root, "guards", guards)
	if sc.FenceStart > 0 {
		add(root, "fence_start", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(sc.FenceStart, 10)})
	}
	if sc.FenceSource != "" && sc.FenceSource != FenceRedis {
		add(root, "fence_source", str(sc.FenceSource))
	}
	if sc.Check != "" && sc.Check != CheckNone {
		add(root, "check", str(sc.Check))
	}
	if sc.Checkpoints {
		add(root, "checkpoints", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	if sc.ReplicationLagMS > 0 {
		add(root, "replication_lag", dur(sc.ReplicationLagMS))
	}
	if sc.Nodes > 1 {
		add(root, "nodes", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(sc.Nodes)})
	}
	events := &yaml.Node{Kind: yaml.SequenceNode}
	for _, st := range sc.Steps {
		ev := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		add(ev, "at", dur(st.AtMS))
		if st.Actor != "" && st.Actor != serverActor {
			add(ev, "actor", str(st.Actor))
		}
		add(ev, "do", str(string(st.Do)))
		if st.ForMS > 0 {
			add(ev, "for", dur(st.ForMS))
		}
		if st.ByMS > 0 {
			add(ev, "by", dur(st.ByMS))
		}
		if st.WaitMS > 0 {
			add(ev, "wait", dur(st.WaitMS))
		}
		if st.Key != "" {
			add(ev, "key", str(st.Key))
		}
		if len(st.Nodes) == 1 {
			add(ev, "node", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(st.Nodes[0])})
		} else if len(st.Nodes) > 1 {
			list := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, k := range st.Nodes {
				list.Content = append(list.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(k)})
			}
			add(ev, "nodes", list)
		}
		if st.Note != "" {
			add(ev, "note", str(st.Note))
		}
		events.Content = append(events.Content, ev)
	}
	add(root, "events", events)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
