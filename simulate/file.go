package simulate

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/lockcore"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"gopkg.in/yaml.v3"
)

//go:embed scenario.schema.json
var schemaJSON []byte

// Schema returns the JSON Schema (draft 2020-12) of scenario files, as
// printed by `lockctl simulate schema`.
func Schema() []byte { return slices.Clone(schemaJSON) }

// compiledSchema is compiled on first use, not at start-up: every lockctl
// command would otherwise pay for it.
var compiledSchema = sync.OnceValue(func() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		panic(err) // the embedded schema is tested; this cannot happen at run time
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("scenario.schema.json", doc); err != nil {
		panic(err)
	}
	return c.MustCompile("scenario.schema.json")
})

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
// naming the line and the field.
func ParseFile(data []byte) (Scenario, error) {
	if len(data) > MaxFileSize {
		return Scenario{}, &FileError{Line: 1, Msg: fmt.Sprintf("the file is over %d bytes; a scenario of at most 10000 events fits well within that", MaxFileSize)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Scenario{}, yamlError(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return Scenario{}, &FileError{Line: 1, Msg: "the file is empty; it needs name, policy and events"}
	}
	root := doc.Content[0]
	if err := validate(root); err != nil {
		return Scenario{}, err
	}
	return decode(root)
}

func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if v, err := strconv.Atoi(n); err == nil {
				line, msg = v, after
			}
		}
	}
	return &FileError{Line: line, Msg: "not valid YAML: " + msg}
}

var printer = message.NewPrinter(language.English)

// validate checks the document against the JSON Schema and reports the first
// error (by line) with its line and field.
func validate(root *yaml.Node) error {
	var v any
	if err := root.Decode(&v); err != nil {
		return &FileError{Line: root.Line, Msg: err.Error()}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return &FileError{Line: root.Line, Msg: "only plain YAML values are allowed: " + err.Error()}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return &FileError{Line: root.Line, Msg: err.Error()}
	}
	err = compiledSchema().Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var found []*FileError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		found = append(found, schemaError(root, e))
	}
	walk(ve)
	slices.SortStableFunc(found, func(a, b *FileError) int { return a.Line - b.Line })
	return found[0]
}

func schemaError(root *yaml.Node, e *jsonschema.ValidationError) *FileError {
	path := e.InstanceLocation
	n, keyLine := nodeAt(root, path)
	fe := &FileError{Line: keyLine, Field: fieldName(path)}
	if n != nil && keyLine == 0 {
		fe.Line = n.Line
	}
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		p := k.Properties[0]
		fe.Field = fieldName(append(slices.Clone(path), p))
		if _, l := nodeAt(root, append(slices.Clone(path), p)); l > 0 {
			fe.Line = l
		}
		fe.Msg = "unknown field; accepted: " + strings.Join(allowedFields(path), ", ")
	case *kind.MinItems:
		fe.Msg = "needs at least one event"
	case *kind.MaxItems:
		fe.Msg = fmt.Sprintf("has %d events; at most %d (a longer run needs more memory than a scenario is worth)", k.Got, k.Want)
	case *kind.Required:
		fe.Msg = "missing " + strings.Join(k.Missing, ", ")
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		fe.Msg = fmt.Sprintf("%v is not one of %s", valueText(n), strings.Join(want, ", "))
	case *kind.Pattern:
		if isDurationField(path) {
			_, err := lockcore.ParseDuration(k.Got)
			if err == nil {
				err = fmt.Errorf("%q is not a duration; use a number with a unit such as 30s, 1500ms, 20m, 13h", k.Got)
			}
			fe.Msg = err.Error()
		} else {
			fe.Msg = fmt.Sprintf("%q must start with a letter and have at most 16 letters, digits, _ or -", k.Got)
		}
	case *kind.Type:
		if isDurationField(path) && n != nil {
			_, err := lockcore.ParseDuration(n.Value)
			if err != nil {
				fe.Msg = err.Error()
				break
			}
		}
		fe.Msg = fmt.Sprintf("%s is a %s; want %s", valueText(n), k.Got, strings.Join(k.Want, " or "))
	default:
		fe.Msg = e.ErrorKind.LocalizedString(printer)
	}
	return fe
}

func valueText(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return "the value"
	}
	return strconv.Quote(n.Value)
}

func isDurationField(path []string) bool {
	if len(path) == 0 {
		return false
	}
	switch path[len(path)-1] {
	case "at", "for", "by", "wait", "lease", "budget", "renew_every", "lease_cap", "renew_bound", "replication_lag":
		return true
	}
	return false
}

func allowedFields(path []string) []string {
	switch {
	case len(path) == 0:
		return []string{"name", "description", "policy", "guards", "fence_start", "fence_source", "check", "checkpoints", "replication_lag", "events"}
	case path[0] == "policy":
		return []string{"lease", "budget", "mode", "renew_every", "lease_cap", "renew_bound"}
	case path[0] == "guards":
		return GuardNames
	}
	return []string{"at", "actor", "do", "for", "by", "wait", "key", "note"}
}

// nodeAt follows a JSON-pointer path from root; it returns the value node
// and, for a mapping entry, the line of its key.
func nodeAt(root *yaml.Node, path []string) (*yaml.Node, int) {
	n, keyLine := root, 0
	for _, tok := range path {
		switch n.Kind {
		case yaml.MappingNode:
			next := (*yaml.Node)(nil)
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == tok {
					next, keyLine = n.Content[i+1], n.Content[i].Line
				}
			}
			if next == nil {
				return n, keyLine
			}
			n = next
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i >= len(n.Content) {
				return n, keyLine
			}
			n, keyLine = n.Content[i], n.Content[i].Line
		default:
			return n, keyLine
		}
	}
	return n, keyLine
}

func fieldName(path []string) string {
	var b strings.Builder
	for _, tok := range path {
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// decode builds the Scenario from a schema-valid document, checking what
// the schema cannot.
func decode(root *yaml.Node) (Scenario, error) {
	sc := Scenario{Guards: AllGuards(), FenceStart: 1, FenceSource: FenceRedis, Check: CheckNone}
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
			}
		case "fence_start":
			sc.FenceStart, err = strconv.ParseInt(v.Value, 10, 64)
			if err != nil {
				err = &FileError{Line: v.Line, Field: "fence_start", Msg: fmt.Sprintf("%q is not a whole number", v.Value)}
			}
		case "fence_source":
			sc.FenceSource = v.Value
		case "check":
			sc.Check = v.Value
		case "checkpoints":
			sc.Checkpoints = v.Value == "true"
		case "replication_lag":
			var d time.Duration
			d, err = duration(v, "replication_lag", true)
			sc.ReplicationLagMS = ms(d)
		case "events":
			for j, ev := range v.Content {
				st, err := decodeStep(ev, j)
				if err != nil {
					return sc, err
				}
				sc.Steps = append(sc.Steps, st)
			}
		}
		if err != nil {
			return sc, err
		}
	}
	if _, err := sc.Policy.resolve(); err != nil {
		n, line := nodeAt(root, []string{"policy"})
		if line == 0 {
			line = n.Line
		}
		return sc, &FileError{Line: line, Field: "policy", Msg: err.Error()}
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
	if d%time.Millisecond != 0 {
		return 0, &FileError{Line: v.Line, Field: field, Msg: fmt.Sprintf("%q is finer than 1ms, the clock's resolution", v.Value)}
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
	ActPause: {"for"}, ActPartition: {"for"}, ActClockJump: {"by"},
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
		case "note":
			st.Note = v.Value
		}
		if err != nil {
			return st, err
		}
	}
	for _, f := range []string{"for", "by", "wait", "key"} {
		if lines[f] > 0 && !slices.Contains(fieldsOf[st.Do], f) {
			return st, &FileError{Line: lines[f], Field: prefix + "." + f, Msg: fmt.Sprintf("%s takes no %s", st.Do, f)}
		}
	}
	switch {
	case (st.Do == ActWork || st.Do == ActCall || st.Do == ActPause || st.Do == ActPartition) && st.ForMS == 0:
		return st, &FileError{Line: n.Line, Field: prefix, Msg: fmt.Sprintf("%s needs for (a duration)", st.Do)}
	case st.Do == ActClockJump && st.ByMS == 0:
		return st, &FileError{Line: n.Line, Field: prefix, Msg: "clock_jump needs by (a duration)"}
	case st.Do != ActFailover && st.Do != ActClockJump && st.Actor == "":
		return st, &FileError{Line: n.Line, Field: prefix, Msg: fmt.Sprintf("%s needs an actor", st.Do)}
	case (st.Do == ActFailover || st.Do == ActClockJump) && st.Actor != "":
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
