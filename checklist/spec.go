package checklist

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/yamlschema"
	"github.com/lockctl/lockctl/lockcore"
	"go.yaml.in/yaml/v3"
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
	doc          *yamlschema.Document
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
	if s.doc == nil {
		return 1
	}
	return s.doc.Line(strings.Split(path, "."))
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

// specLimits bound what a spec's YAML may expand to: a "billion laughs"
// file, or an alias of its own anchor, is an error, not a hang.
var specLimits = yamlschema.Limits{MaxValues: 10000, MaxDepth: 50}

// specSchema validates specs; "go-duration" is a duration with a unit.
var specSchema = yamlschema.NewSchema(schemaJSON, map[string]func(any) bool{
	"go-duration": func(v any) bool { return durationError(v) == nil },
})

// ParseSpec parses and validates one spec file against Schema. It returns
// SpecErrors (each with the file and line) for YAML syntax errors, duplicate
// keys, unknown fields, wrong types, values not accepted and bad durations.
func ParseSpec(file string, data []byte) (*Spec, error) {
	doc, err := yamlschema.Parse(data, specLimits)
	var syn *yamlschema.SyntaxError
	var probs yamlschema.Problems
	switch {
	case errors.As(err, &syn):
		return nil, SpecErrors{{File: file, Line: syn.Line, Message: syn.Msg}}
	case errors.Is(err, yamlschema.ErrEmpty):
		return nil, SpecErrors{{File: file, Line: 1, Message: "the spec is empty; `lockctl checklist init` writes a template"}}
	case errors.As(err, &probs):
		return nil, specErrors(file, probs)
	case err != nil:
		return nil, err
	}
	probs, err = specSchema.Validate(doc)
	if err != nil {
		return nil, fmt.Errorf("checklist %w", err)
	}
	if len(probs) > 0 {
		return nil, specErrors(file, probs)
	}
	s := &Spec{File: file, doc: doc}
	if err := doc.Root.Decode(s); err != nil {
		return nil, SpecErrors{{File: file, Line: 1, Message: err.Error()}}
	}
	return s, nil
}

// durationError is why v is not a "go-duration": a positive duration with a
// unit; a bare number gets lockcore's "has no unit; did you mean 60s?".
// Values of other types pass (the type keyword reports them).
func durationError(v any) error {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return nil
	}
	_, err := lockcore.ParsePositiveDuration(s)
	return err
}

// specErrors words each problem as a SpecError at its line.
func specErrors(file string, probs yamlschema.Problems) SpecErrors {
	errs := make(SpecErrors, 0, len(probs))
	for _, p := range probs {
		// "size": Parse puts it on the top-level field.
		at := label(p, p.Path)
		msg, parsed := p.ParseMessage("task spec", specLimits)
		if !parsed {
			switch p.Keyword {
			case "additionalProperties":
				parent := p.Path[:len(p.Path)-1]
				msg = fmt.Sprintf("unknown field; accepted in %s: %s", label(p, parent), strings.Join(specSchema.Properties(parent), ", "))
			case "required":
				for _, name := range p.Names {
					errs = append(errs, SpecError{file, p.Line, fmt.Sprintf("%s: required field missing", label(p, append(p.Path, name)))})
				}
				continue
			case "enum":
				msg = fmt.Sprintf("%s is not one of %v", display(p.Value), p.Params["expected"])
			case "type":
				msg = fmt.Sprintf("got %s; want %s", p.Got(), p.Want())
			case "minLength":
				msg = "must not be empty"
			case "format":
				msg = fmt.Sprint(durationError(p.Value))
			default:
				msg = p.Message
			}
		}
		errs = append(errs, SpecError{file, p.Line, at + ": " + msg})
	}
	return errs
}

// label names q, a path in p's document: "spec" for the document itself.
func label(p yamlschema.Problem, q yamlschema.Path) string {
	if len(q) == 0 {
		return "spec"
	}
	return p.Name(q)
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

//go:embed template.yaml
var templateYAML []byte

// Template returns the commented spec `lockctl checklist init` writes; it
// passes every rule under the default policy.
func Template() []byte { return bytes.Clone(templateYAML) }
