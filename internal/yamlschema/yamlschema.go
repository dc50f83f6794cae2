// Package yamlschema validates YAML files (scenario files, checklist specs)
// against a JSON Schema (draft 2020-12) and puts every problem on a line.
//
// Parse turns a YAML document into JSON values, refusing what JSON cannot
// hold (duplicate keys, non-string keys) and documents that aliases expand
// past Limits; Schema.Validate runs github.com/kaptinlin/jsonschema on those
// values and maps each failed keyword back to the line of its YAML value.
// Callers word the messages: a Problem carries the keyword, the path, the
// value and the names involved, not prose.
package yamlschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/kaptinlin/jsonschema"
	"go.yaml.in/yaml/v3"
)

// Limits bound what a document may expand to: YAML aliases let a small file
// stand for a huge tree ("billion laughs"), or for itself.
type Limits struct {
	MaxValues int // scalars, mappings and sequences, aliases counted each time
	MaxDepth  int // nesting levels
}

// Path is a location in a document: mapping keys, and sequence indexes as
// decimal strings.
type Path []string

// indexes holds, by Path.key, the paths whose last token is a sequence
// index: a mapping key may be "1" too.
type indexes map[string]bool

// name is p as a field name: "events[2].for", "lock.budget", "lock.1" (a
// key); "" for the document itself, and `""` for an empty key.
func (ix indexes) name(p Path) string {
	var b strings.Builder
	for i, tok := range p {
		if ix[p[:i+1].key()] {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		if tok == "" {
			tok = `""`
		}
		b.WriteString(tok)
	}
	return b.String()
}

// key is p as a map key: every token after a NUL, so that the document ("")
// and an empty key ("\x00") differ.
func (p Path) key() string {
	var b strings.Builder
	for _, tok := range p {
		b.WriteByte(0)
		b.WriteString(tok)
	}
	return b.String()
}

// Problem is one thing wrong with a document.
type Problem struct {
	Line int  // 1-based line of the value (of the key, for a mapping entry)
	Path Path // where; an unknown or duplicate field's path ends with its name
	// Keyword is the JSON Schema keyword that failed ("required", "enum",
	// "type", "additionalProperties", "pattern", "format", "minItems",
	// "maxItems", "minLength", "minProperties", ...), or one of what the YAML
	// itself gets wrong: "duplicate" (Params["first"] is the first line),
	// "key" (a key that is not a plain scalar, or a merge of something other
	// than mappings), "size" (past Limits), "documents" (a second document,
	// at its line).
	Keyword string
	Names   []string       // required: the missing fields; additionalProperties: the unknown one
	Value   any            // the value at Path (nil when absent)
	Params  map[string]any // the validator's parameters, e.g. enum's "expected" ("a, b, c")
	Message string         // the validator's own wording (English), for keywords a caller does not word

	ix        indexes // the document's sequence indexes, for Field and Name
	nonFinite bool    // Value is the text of .inf or .nan, which JSON cannot hold
}

// Field is the problem's path as a field name: "events[2].for".
func (p Problem) Field() string { return p.ix.name(p.Path) }

// ParseMessage words a problem Parse itself found, for a file that holds
// one (e.g. "task spec") under limits l: aliases past the limits ("size"),
// a key that is no plain name ("key"), a second document ("documents") or
// a repeated key ("duplicate"). ok is false for any other (schema)
// problem, which the caller words.
func (p Problem) ParseMessage(one string, l Limits) (msg string, ok bool) {
	switch p.Keyword {
	case "size":
		return fmt.Sprintf("the file expands to more than %d values or %d levels (YAML aliases?)", l.MaxValues, l.MaxDepth), true
	case "key":
		return "a key must be a plain name (a merge key takes mappings)", true
	case "documents":
		return "a second YAML document (---); a file holds one " + one, true
	case "duplicate":
		return fmt.Sprintf("duplicate field (first on line %v)", p.Params["first"]), true
	}
	return "", false
}

// Name is q, a path in the same document, as a field name.
func (p Problem) Name(q Path) string { return p.ix.name(q) }

// Problems is a list of problems sorted by line; as an error it is its
// first problem.
type Problems []Problem

func (ps Problems) Error() string {
	if len(ps) == 0 {
		return "no problems"
	}
	p := ps[0]
	return fmt.Sprintf("line %d: %s: %s", p.Line, p.Field(), p.Keyword)
}

// SyntaxError is YAML that does not parse.
type SyntaxError struct {
	Line int
	Msg  string // yaml's message without its "yaml: line N: " prefix
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// ErrEmpty is returned by Parse for a file without a document.
var ErrEmpty = errors.New("empty document")

// Document is a parsed YAML document and its JSON values.
type Document struct {
	Root  *yaml.Node // the document's top node, aliases and merge keys expanded
	Value any        // map[string]any, []any, string, bool, int64, float64 or nil
	lines map[string]int
	nodes map[string]*yaml.Node
	ix    indexes
}

// Name is p as a field name: "events[2].for".
func (d *Document) Name(p Path) string { return d.ix.name(p) }

// Node returns the YAML node of the value at p, or nil.
func (d *Document) Node(p Path) *yaml.Node { return d.nodes[p.key()] }

// Line returns the line of the value at p, or of its nearest parent that
// has one (1 at worst).
func (d *Document) Line(p Path) int {
	for n := len(p); n >= 0; n-- {
		if l, ok := d.lines[p[:n].key()]; ok {
			return l
		}
	}
	return 1
}

// Parse reads a file of one YAML document. It returns *SyntaxError for YAML
// that does not parse, ErrEmpty for no document, and Problems ("duplicate",
// "key", "size", "documents") for YAML that JSON cannot hold, that expands
// past lim, or that goes on after the first document.
func Parse(data []byte, lim Limits) (*Document, error) {
	if err := unprintable(data); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil, ErrEmpty
	} else if err != nil {
		return nil, syntaxError(err, data)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, ErrEmpty
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, Problems{{Line: next.Line, Keyword: "documents", ix: indexes{}}}
	} else if !errors.Is(err, io.EOF) {
		return nil, syntaxError(err, data)
	}
	root := doc.Content[0]
	if p := oversize(root, lim); p != nil {
		// Counted before converting: a merge-key bomb (<<: [*a, *a, ...]
		// nested) would otherwise be expanded in full, 20^6 entries from
		// 600 bytes, before the converter's own count could stop it.
		return nil, Problems{*p}
	}
	c := &converter{lim: lim, lines: map[string]int{Path(nil).key(): root.Line}, nodes: map[string]*yaml.Node{}, ix: indexes{}}
	v, expanded := c.value(root, nil)
	c.nodes[Path(nil).key()] = expanded
	if len(c.problems) > 0 {
		slices.SortStableFunc(c.problems, func(a, b Problem) int { return a.Line - b.Line })
		return nil, c.problems
	}
	return &Document{Root: expanded, Value: v, lines: c.lines, nodes: c.nodes, ix: c.ix}, nil
}

// unprintable is a *SyntaxError at the line of the first byte that is not
// UTF-8, or of the first character YAML does not allow (YAML 1.2, 5.1: C0
// controls but tab, LF and CR; DEL; C1 controls but NEL; U+FFFE, U+FFFF),
// or nil; the YAML parser reports no line for them. A file that starts with
// a UTF-16 byte order mark is left to the parser, which reads UTF-16.
func unprintable(data []byte) error {
	if bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe}) {
		return nil
	}
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		msg := ""
		switch {
		case r == utf8.RuneError && n == 1:
			msg = fmt.Sprintf("byte 0x%02x is not UTF-8; the file must be UTF-8 text", data[i])
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r', r == 0x7f:
			msg = fmt.Sprintf("control character 0x%02x is not allowed in YAML", r)
		case r >= 0x80 && r <= 0x9f && r != 0x85, r == 0xfffe, r == 0xffff:
			msg = fmt.Sprintf("control character U+%04X is not allowed in YAML", r)
		}
		if msg != "" {
			return &SyntaxError{Line: 1 + bytes.Count(data[:i], []byte("\n")), Msg: msg}
		}
		i += n
	}
	return nil
}

func syntaxError(err error, data []byte) *SyntaxError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if v, err := strconv.Atoi(n); err == nil {
				line, msg = v, after
				if parserError(msg) {
					// At the end of the file that is the line past it.
					line = min(line+1, max(bytes.Count(bytes.TrimRight(data, "\n"), []byte("\n"))+1, 1))
				}
			}
		}
	}
	return &SyntaxError{Line: line, Msg: msg}
}

// parserError reports a message of yaml's parser, rather than its scanner:
// yaml.v3 numbers the parser's lines from 0 (it adds 1 to the scanner's
// only), so such an error named the line before the construct it is about.
func parserError(msg string) bool {
	for _, m := range []string{"did not find expected <document start>", "did not find expected node content",
		"did not find expected key", "did not find expected '-' indicator", "did not find expected ',' or ']'",
		"did not find expected ',' or '}'", "found undefined tag handle", "found duplicate %YAML directive",
		"found incompatible YAML document", "found duplicate %TAG directive"} {
		if strings.HasPrefix(msg, m) {
			return true
		}
	}
	return false
}

// oversize is the "size" problem of a document whose values, aliases and
// merge keys expanded, are more than lim.MaxValues, at the top-level entry
// that takes the count past it (the converter's place); nil when within.
func oversize(root *yaml.Node, lim Limits) *Problem {
	s := &sizer{max: lim.MaxValues, memo: map[*yaml.Node]int{}}
	if s.values(root) <= lim.MaxValues {
		return nil
	}
	p := Problem{Line: root.Line, Keyword: "size", Params: map[string]any{"values": lim.MaxValues, "depth": lim.MaxDepth}, ix: indexes{}}
	total := 1
	for i := 0; root.Kind == yaml.MappingNode && i+1 < len(root.Content); i += 2 {
		if total += s.values(root.Content[i+1]); total > lim.MaxValues {
			k := root.Content[i]
			p.Line, p.Path = k.Line, Path{k.Value}
			break
		}
	}
	return &p
}

// sizer counts the values a node expands to, each alias and merge key
// counted every time it is used, as the converter would meet them; a node's
// count is kept, so a file of N nodes costs O(N) however far it expands.
type sizer struct {
	max  int                // counts stop just past it: no overflow
	memo map[*yaml.Node]int // a node's expanded count; -1 while it is being counted
}

// values is the number of values n expands to, capped at s.max+1; an alias
// to a node that contains it (a cycle) counts as past the cap.
func (s *sizer) values(n *yaml.Node) int {
	if v, ok := s.memo[n]; ok {
		if v < 0 {
			return s.max + 1
		}
		return v
	}
	s.memo[n] = -1
	v := 1
	switch n.Kind {
	case yaml.AliasNode:
		v = s.values(n.Alias)
	case yaml.MappingNode:
		for i := 1; i < len(n.Content) && v <= s.max; i += 2 { // values only: the converter refuses a key that is no scalar
			v += s.values(n.Content[i])
		}
	case yaml.SequenceNode:
		for _, e := range n.Content {
			if v += s.values(e); v > s.max {
				break
			}
		}
	}
	v = min(v, s.max+1)
	s.memo[n] = v
	return v
}

type converter struct {
	lim      Limits
	lines    map[string]int
	nodes    map[string]*yaml.Node
	ix       indexes
	values   int
	problems Problems
}

// value converts n at path p to a JSON value and returns it with n
// expanded: aliases replaced by what they stand for and merge keys ("<<")
// by the entries they bring in, so that a caller reading the nodes sees what
// was validated. After a "size" problem it stops converting.
func (c *converter) value(n *yaml.Node, p Path) (any, *yaml.Node) {
	c.values++
	if c.values > c.lim.MaxValues || len(p) > c.lim.MaxDepth {
		if !slices.ContainsFunc(c.problems, func(x Problem) bool { return x.Keyword == "size" }) {
			c.problems = append(c.problems, Problem{Line: n.Line, Path: p[:min(len(p), 1)], Keyword: "size",
				Params: map[string]any{"values": c.lim.MaxValues, "depth": c.lim.MaxDepth}, ix: c.ix})
		}
		return nil, n
	}
	switch n.Kind {
	case yaml.AliasNode:
		return c.value(n.Alias, p)
	case yaml.MappingNode:
		out := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Style: n.Style, Line: n.Line, Column: n.Column}
		obj := make(map[string]any, len(n.Content)/2)
		add := func(k, v *yaml.Node, merged bool) {
			kp := append(slices.Clip(p), k.Value)
			if _, dup := obj[k.Value]; dup {
				if !merged { // an explicit key overrides a merged one, not another explicit one
					c.problems = append(c.problems, Problem{Line: k.Line, Path: kp, Keyword: "duplicate",
						Params: map[string]any{"first": c.lines[kp.key()]}, ix: c.ix})
				}
				return
			}
			c.lines[kp.key()] = k.Line
			val, vn := c.value(v, kp)
			c.nodes[kp.key()] = vn
			obj[k.Value] = val
			out.Content = append(out.Content, k, vn)
		}
		var merges []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge":
				merges = append(merges, v)
			case k.Kind != yaml.ScalarNode:
				c.problems = append(c.problems, Problem{Line: k.Line, Path: p, Keyword: "key", ix: c.ix})
			default:
				add(k, v, false)
			}
		}
		for _, m := range merges {
			for _, k := range c.mergeEntries(m, p, 0) {
				add(k[0], k[1], true)
			}
		}
		return obj, out
	case yaml.SequenceNode:
		out := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Style: n.Style, Line: n.Line, Column: n.Column}
		arr := make([]any, 0, len(n.Content))
		for i, e := range n.Content {
			ep := append(slices.Clip(p), strconv.Itoa(i))
			c.ix[ep.key()] = true
			c.lines[ep.key()] = e.Line
			val, en := c.value(e, ep)
			c.nodes[ep.key()] = en
			arr = append(arr, val)
			out.Content = append(out.Content, en)
		}
		return arr, out
	}
	switch n.ShortTag() {
	case "!!null":
		return nil, n
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err == nil {
			return b, n
		}
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return i, n
		}
		fallthrough
	case "!!float":
		var f float64
		if err := n.Decode(&f); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, n
		}
	}
	return n.Value, n
}

// mergeEntries returns the key/value pairs a merge key's value brings in
// (YAML 1.1 merge: a mapping, or a list of them, the first one winning),
// with the merges inside them applied; a value of another kind is a "key"
// problem.
func (c *converter) mergeEntries(m *yaml.Node, p Path, depth int) [][2]*yaml.Node {
	for m.Kind == yaml.AliasNode && depth <= c.lim.MaxDepth {
		m, depth = m.Alias, depth+1
	}
	if depth > c.lim.MaxDepth {
		return nil // an alias loop: the size check reports it where it expands
	}
	var out [][2]*yaml.Node
	switch m.Kind {
	case yaml.SequenceNode:
		for _, e := range m.Content {
			out = append(out, c.mergeEntries(e, p, depth+1)...)
		}
		return out
	case yaml.MappingNode:
		var nested []*yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				nested = append(nested, m.Content[i+1])
				continue
			}
			out = append(out, [2]*yaml.Node{m.Content[i], m.Content[i+1]})
		}
		for _, n := range nested {
			out = append(out, c.mergeEntries(n, p, depth+1)...)
		}
		return out
	}
	c.problems = append(c.problems, Problem{Line: m.Line, Path: p, Keyword: "key", ix: c.ix})
	return nil
}

// Schema is a JSON Schema compiled on first use (not at start-up: every
// lockctl command would pay for it).
type Schema struct {
	compile func() (*jsonschema.Schema, error)
	doc     func() map[string]any
}

// NewSchema returns the schema in raw (JSON); formats are the custom
// "format" values it asserts (name → accepts; a validator sees every
// instance type).
func NewSchema(raw []byte, formats map[string]func(any) bool) *Schema {
	return &Schema{
		compile: sync.OnceValues(func() (*jsonschema.Schema, error) {
			c := jsonschema.NewCompiler().SetAssertFormat(true)
			for name, ok := range formats {
				c.RegisterFormat(name, ok)
			}
			return c.Compile(raw)
		}),
		doc: sync.OnceValue(func() map[string]any {
			var m map[string]any
			_ = json.Unmarshal(raw, &m) // Validate has compiled it first: it is JSON
			return m
		}),
	}
}

// Validate checks d against the schema. It returns the problems sorted by
// line (nil when d is valid), or an error when the schema does not compile.
func (s *Schema) Validate(d *Document) (Problems, error) {
	sch, err := s.compile()
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	res := sch.Validate(d.Value)
	if res.IsValid() {
		return nil, nil
	}
	var ps Problems
	s.collect(d, res, nil, &ps)
	// By line, then path and keyword: the validator's result tree comes in
	// map order.
	slices.SortFunc(ps, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		if c := strings.Compare(a.Field(), b.Field()); c != 0 {
			return c
		}
		return strings.Compare(a.Keyword, b.Keyword)
	})
	return ps, nil
}

// Keywords whose failure only says that a subschema failed: the subschema's
// own result names the problem.
var aggregate = map[string]bool{"properties": true, "items": true, "prefixItems": true, "$ref": true,
	"$dynamicRef": true, "allOf": true, "schema": true}

// collect walks a result tree; instance locations in it are relative to the
// parent result. additionalProperties is read as false (an unknown field),
// the only way lockctl's schemas use it: the unknown fields are the keys of
// the mapping that the schema does not list (the validator's message quotes
// them in a way no parser can take apart, e.g. 'a', 'b' for one key).
func (s *Schema) collect(d *Document, r *jsonschema.EvaluationResult, at Path, ps *Problems) {
	if r.IsValid() {
		return
	}
	at = append(slices.Clip(at), pointer(r.InstanceLocation)...)
	if _, present := d.lines[at.key()]; !present {
		return // kaptinlin also checks an absent required field as null; "required" reports it
	}
	keywords := make([]string, 0, len(r.Errors))
	for k := range r.Errors {
		keywords = append(keywords, k)
	}
	slices.Sort(keywords)
	for _, k := range keywords {
		e := r.Errors[k]
		if aggregate[e.Keyword] {
			continue
		}
		p := Problem{Line: d.Line(at), Path: at, Keyword: e.Keyword, Value: valueAt(d.Value, at), Params: e.Params, Message: e.Error(),
			ix: d.ix, nonFinite: d.nonFinite(at)}
		switch e.Keyword {
		case "required":
			p.Names = quoted(e.Params)
		case "additionalProperties":
			for _, name := range s.unknown(d, at) {
				q := append(slices.Clip(at), name)
				*ps = append(*ps, Problem{Line: d.Line(q), Path: q, Keyword: e.Keyword, Names: []string{name}, Value: valueAt(d.Value, q), Params: e.Params, Message: e.Error(),
					ix: d.ix, nonFinite: d.nonFinite(q)})
			}
			continue
		}
		*ps = append(*ps, p)
	}
	for _, c := range r.Details {
		if strings.HasPrefix(c.EvaluationPath, "/additionalProperties/") {
			continue // reported above, by name
		}
		s.collect(d, c, at, ps)
	}
}

// unknown lists, in document order, the keys of the mapping at p that the
// schema does not accept there.
func (s *Schema) unknown(d *Document, p Path) []string {
	n := d.Node(p)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	known := s.Properties(p)
	var names []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !slices.Contains(known, k) {
			names = append(names, k)
		}
	}
	return names
}

// quoted reads the names in a required error: "'a'" or "'a', 'b'" (field
// names from the schema, which hold no quote or comma).
func quoted(params map[string]any) []string {
	s, _ := params["property"].(string)
	if s == "" {
		s, _ = params["properties"].(string)
	}
	var names []string
	for _, q := range strings.Split(s, ", ") {
		if n := strings.TrimSuffix(strings.TrimPrefix(q, "'"), "'"); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// pointer splits a JSON pointer ("/events/2") into a Path.
func pointer(s string) Path {
	if s == "" {
		return nil
	}
	toks := strings.Split(strings.TrimPrefix(s, "/"), "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks
}

// nonFinite tells whether the value at p is a YAML float JSON cannot hold
// (.inf, -.inf, .nan), which Parse keeps as its text.
func (d *Document) nonFinite(p Path) bool {
	n := d.Node(p)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" {
		return false
	}
	_, isText := valueAt(d.Value, p).(string)
	return isText
}

// valueAt returns the value at p (nil when absent).
func valueAt(v any, p Path) any {
	for _, tok := range p {
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// Properties lists, sorted, the field names the schema accepts in the
// mapping at p (following properties, items and local $refs).
func (s *Schema) Properties(p Path) []string {
	props, _ := s.deref(s.node(p))["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Def names the "$defs" entry the schema refers the value at p to:
// "duration" for {"$ref": "#/$defs/duration"}; "" when it refers to none.
func (s *Schema) Def(p Path) string {
	if name, ok := defName(s.node(p)); ok {
		return name
	}
	return ""
}

// defName reads a schema node's local "$ref": "#/$defs/name"; ok is false
// when it has none.
func defName(node map[string]any) (name string, ok bool) {
	ref, _ := node["$ref"].(string)
	return strings.CutPrefix(ref, "#/$defs/")
}

// node returns the schema for the value at p, its own $ref not followed
// (nil when the schema has none there).
func (s *Schema) node(p Path) map[string]any {
	node := s.doc()
	for _, tok := range p {
		node = s.deref(node)
		if _, err := strconv.Atoi(tok); err == nil {
			node, _ = node["items"].(map[string]any)
		} else {
			props, _ := node["properties"].(map[string]any)
			node, _ = props[tok].(map[string]any)
		}
		if node == nil {
			return nil
		}
	}
	return node
}

// deref follows a local "$ref": "#/$defs/name".
func (s *Schema) deref(node map[string]any) map[string]any {
	name, ok := defName(node)
	if !ok {
		return node
	}
	defs, _ := s.doc()["$defs"].(map[string]any)
	def, _ := defs[name].(map[string]any)
	return def
}

// typeWords are JSON Schema's type names in the words of a YAML file.
var typeWords = map[string]string{"string": "a string", "number": "a number", "integer": "a whole number",
	"boolean": "true or false", "array": "a list", "object": "a mapping", "null": "null"}

// Got describes the value of a problem for a message: "5 (a whole
// number)", `"x" (a string)`, ".inf (not a finite number)", "a list", "a
// mapping" or "null".
func (p Problem) Got() string {
	if p.nonFinite {
		return fmt.Sprintf("%v (not a finite number)", p.Value)
	}
	switch v := p.Value.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return strconv.Quote(v) + " (a string)"
	case bool:
		return fmt.Sprintf("%v (a boolean)", v)
	case int64:
		return fmt.Sprintf("%d (a whole number)", v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64) + " (a number)"
	}
	return fmt.Sprintf("%v", p.Value)
}

// Want is what a "type" problem's schema accepts, in YAML words: "a string
// or a number".
func (p Problem) Want() string {
	s, _ := p.Params["expected"].(string)
	var words []string
	for _, t := range strings.Split(s, ", ") {
		if w, ok := typeWords[t]; ok {
			t = w
		}
		words = append(words, t)
	}
	return strings.Join(words, " or ")
}
