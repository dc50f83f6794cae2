package checklist

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
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

//go:embed schema.json
var schemaJSON []byte

// Schema returns the JSON Schema (draft 2020-12) of a task spec, as
// `lockctl checklist schema` prints it. Durations use the custom format
// "go-duration": a Go duration with a unit, checked by lockcore.ParseDuration.
func Schema() []byte { return bytes.Clone(schemaJSON) }

// Spec is one declared long task (a `--spec` file), decoded after it passed
// the JSON Schema. Optional booleans are pointers so "absent" differs from
// false; absent durations are zero.
type Spec struct {
	// File is the path the spec was read from, as given.
	File         string           `yaml:"-"`
	Task         string           `yaml:"task"`
	Entry        string           `yaml:"entry"`
	Identity     IdentitySpec     `yaml:"identity"`
	Lock         LockSpec         `yaml:"lock"`
	Cancellation CancellationSpec `yaml:"cancellation"`
	Commit       CommitSpec       `yaml:"commit"`
	Recovery     RecoverySpec     `yaml:"recovery"`
	// lines maps a dotted field path ("lock.renew") to its line in File.
	lines map[string]int
}

// IdentitySpec says who establishes the caller's trusted status.
type IdentitySpec struct {
	TrustedBy string `yaml:"trusted_by"`
}

// LockSpec is the task's lock: key, budget, lease and the owner/fence tokens.
type LockSpec struct {
	Field         string        `yaml:"field"`
	KeyTemplate   string        `yaml:"key_template"`
	FenceTemplate string        `yaml:"fence_template"`
	Budget        Duration      `yaml:"budget"`
	Mode          lockcore.Mode `yaml:"mode"`
	Lease         Duration      `yaml:"lease"`
	RenewEvery    Duration      `yaml:"renew_every"`
	Renew         string        `yaml:"renew"`
	OwnerToken    string        `yaml:"owner_token"`
	Release       string        `yaml:"release"`
	Fencing       string        `yaml:"fencing"`
	Cluster       bool          `yaml:"cluster"`
}

// CancellationSpec says how the work stops.
type CancellationSpec struct {
	OnLeaseLoss         *bool    `yaml:"on_lease_loss"`
	BudgetEnforced      *bool    `yaml:"budget_enforced"`
	ExternalCallTimeout Duration `yaml:"external_call_timeout"`
}

// CommitSpec says what the write boundary checks.
type CommitSpec struct {
	Check  string `yaml:"check"`
	Writes *bool  `yaml:"writes"`
}

// RecoverySpec says how the task recovers from a partial failure.
type RecoverySpec struct {
	IdempotencyKey   string   `yaml:"idempotency_key"`
	UniqueConstraint *bool    `yaml:"unique_constraint"`
	Outbox           *bool    `yaml:"outbox"`
	CheckpointEvery  Duration `yaml:"checkpoint_every"`
}

// Duration is a spec duration parsed with lockcore.ParsePositiveDuration;
// zero means the field was absent.
type Duration time.Duration

// UnmarshalYAML parses a Go duration with a unit.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := lockcore.ParsePositiveDuration(n.Value)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Line returns the spec line of a dotted field path ("lock.renew"); for an
// absent field, the line of its nearest present parent (1 for the document).
func (s *Spec) Line(path string) int {
	for path != "" {
		if l, ok := s.lines[path]; ok {
			return l
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 1
}

// SpecError is one problem in a spec file, located at File:Line.
type SpecError struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func (e SpecError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message) }

// SpecErrors are all the problems found in spec files, in file and line order.
type SpecErrors []SpecError

func (es SpecErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// ParseSpec parses and validates one spec file against Schema. It returns
// SpecErrors (each with the file and line) for YAML syntax errors, duplicate
// keys, unknown fields, wrong types, values not accepted and bad durations.
func ParseSpec(file string, data []byte) (*Spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg, line := err.Error(), 1
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		return nil, SpecErrors{{File: file, Line: line, Message: strings.TrimPrefix(msg, "yaml: ")}}
	}
	if len(doc.Content) == 0 {
		return nil, SpecErrors{{File: file, Line: 1, Message: "the spec is empty; `lockctl checklist init` writes a template"}}
	}
	root := doc.Content[0]
	lines := map[string]int{}
	conv := &converter{file: file, lines: lines}
	inst, errs := conv.toJSON(root, "", 0)
	if len(errs) > 0 {
		return nil, errs
	}
	sch, err := compiledSchema()
	if err != nil {
		return nil, err
	}
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, err
		}
		return nil, schemaErrors(file, ve, lines, inst)
	}
	s := &Spec{File: file, lines: lines}
	if err := root.Decode(s); err != nil {
		return nil, SpecErrors{{File: file, Line: 1, Message: err.Error()}}
	}
	return s, nil
}

// Limits of a spec's YAML: aliases may not expand it past maxNodes values
// or nest it past maxDepth (a "billion laughs" file, or an alias of its own
// anchor, is an error, not a hang).
const (
	maxNodes = 10000
	maxDepth = 50
)

// converter turns a YAML node into the JSON values the validator takes,
// recording each field's line and refusing duplicate keys and non-string keys.
type converter struct {
	file  string
	lines map[string]int
	nodes int
}

func (c *converter) toJSON(n *yaml.Node, path string, depth int) (any, SpecErrors) {
	c.nodes++
	if c.nodes > maxNodes || depth > maxDepth {
		return nil, SpecErrors{{c.file, n.Line, fmt.Sprintf("%s: the spec expands to more than %d values or %d levels (YAML aliases?)", topField(path), maxNodes, maxDepth)}}
	}
	switch n.Kind {
	case yaml.AliasNode:
		return c.toJSON(n.Alias, path, depth+1)
	case yaml.MappingNode:
		obj := map[string]any{}
		var errs SpecErrors
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(path, k.Value)
			if k.Kind != yaml.ScalarNode {
				errs = append(errs, SpecError{c.file, k.Line, fmt.Sprintf("%s: a key must be a plain name", label(path))})
				continue
			}
			if _, dup := obj[k.Value]; dup {
				errs = append(errs, SpecError{c.file, k.Line, fmt.Sprintf("%s: duplicate field (first on line %d)", p, c.lines[p])})
				continue
			}
			c.lines[p] = k.Line
			val, es := c.toJSON(v, p, depth+1)
			if len(es) > 0 {
				return nil, append(errs, es...)
			}
			obj[k.Value] = val
		}
		return obj, errs
	case yaml.SequenceNode:
		arr := make([]any, 0, len(n.Content))
		for i, e := range n.Content {
			val, es := c.toJSON(e, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if len(es) > 0 {
				return nil, es
			}
			arr = append(arr, val)
		}
		return arr, nil
	}
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err == nil {
			return b, nil
		}
	case "!!int", "!!float":
		var f float64
		if err := n.Decode(&f); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return json.Number(strconv.FormatFloat(f, 'f', -1, 64)), nil
		}
	}
	return n.Value, nil
}

// topField is the top-level field of a path ("lock" of "lock.renew"), or "spec".
func topField(path string) string {
	if i := strings.IndexAny(path, ".["); i >= 0 {
		path = path[:i]
	}
	return label(path)
}

func label(path string) string {
	if path == "" {
		return "spec"
	}
	return path
}

var (
	schemaOnce sync.Once
	schemaComp *jsonschema.Schema
	schemaErr  error
	// schemaDoc is the parsed schema, read to list accepted field names.
	schemaDoc map[string]any
)

func compiledSchema() (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
		if err != nil {
			schemaErr = fmt.Errorf("checklist schema: %w", err)
			return
		}
		schemaDoc, _ = doc.(map[string]any)
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		c.RegisterFormat(&jsonschema.Format{Name: "go-duration", Validate: validateDuration})
		if err := c.AddResource("task-spec.schema.json", doc); err != nil {
			schemaErr = fmt.Errorf("checklist schema: %w", err)
			return
		}
		schemaComp, schemaErr = c.Compile("task-spec.schema.json")
	})
	return schemaComp, schemaErr
}

// validateDuration is the "go-duration" format: a positive duration with a
// unit; a bare number gets lockcore's "has no unit; did you mean 60s?".
func validateDuration(v any) error {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = x.String()
	default:
		return nil // the type keyword reports other types
	}
	_, err := lockcore.ParsePositiveDuration(s)
	return err
}

// schemaErrors flattens a validation error into one SpecError per leaf,
// located at the field's line (an unknown field at its own key's line).
func schemaErrors(file string, ve *jsonschema.ValidationError, lines map[string]int, inst any) SpecErrors {
	var errs SpecErrors
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		path := strings.Join(e.InstanceLocation, ".")
		line := func(p string) int {
			for p != "" {
				if l, ok := lines[p]; ok {
					return l
				}
				i := strings.LastIndexByte(p, '.')
				if i < 0 {
					break
				}
				p = p[:i]
			}
			return 1
		}
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			for _, name := range k.Properties {
				p := join(path, name)
				errs = append(errs, SpecError{file, line(p), fmt.Sprintf("%s: unknown field; accepted in %s: %s", p, label(path), strings.Join(acceptedFields(e.InstanceLocation), ", "))})
			}
		case *kind.Required:
			for _, name := range k.Missing {
				errs = append(errs, SpecError{file, line(path), fmt.Sprintf("%s: required field missing", join(path, name))})
			}
		case *kind.Enum:
			want := make([]string, len(k.Want))
			for i, w := range k.Want {
				want[i] = fmt.Sprint(w)
			}
			errs = append(errs, SpecError{file, line(path), fmt.Sprintf("%s: %s is not one of %s", label(path), display(k.Got), strings.Join(want, ", "))})
		case *kind.Type:
			got := "null"
			if v := valueAt(inst, e.InstanceLocation); v != nil {
				got = fmt.Sprintf("%s (%s)", display(v), k.Got)
			}
			errs = append(errs, SpecError{file, line(path), fmt.Sprintf("%s: got %s; want %s", label(path), got, strings.Join(k.Want, " or "))})
		case *kind.Format:
			errs = append(errs, SpecError{file, line(path), fmt.Sprintf("%s: %v", label(path), k.Err)})
		default:
			errs = append(errs, SpecError{file, line(path), fmt.Sprintf("%s: %s", label(path), e.ErrorKind.LocalizedString(message.NewPrinter(language.English)))})
		}
	}
	walk(ve)
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	return errs
}

// valueAt returns the instance value at a location (nil when absent).
func valueAt(inst any, loc []string) any {
	for _, name := range loc {
		obj, ok := inst.(map[string]any)
		if !ok {
			return nil
		}
		inst = obj[name]
	}
	return inst
}

func display(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return fmt.Sprint(v)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// acceptedFields lists the property names the schema allows at an instance
// location (only objects nested under "properties" occur in a spec).
func acceptedFields(loc []string) []string {
	node := schemaDoc
	for _, name := range loc {
		props, _ := node["properties"].(map[string]any)
		next, _ := props[name].(map[string]any)
		if next == nil {
			return nil
		}
		node = next
	}
	props, _ := node["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

//go:embed template.yaml
var templateYAML []byte

// Template returns the commented spec `lockctl checklist init` writes; it
// passes every rule under the default policy.
func Template() []byte { return bytes.Clone(templateYAML) }
