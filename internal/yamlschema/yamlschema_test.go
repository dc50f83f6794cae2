package yamlschema

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

const testSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["name", "items"],
  "properties": {
    "name": {"type": "string", "minLength": 1},
    "mode": {"enum": ["a", "b"]},
    "items": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/item"}}
  },
  "$defs": {
    "item": {
      "type": "object",
      "additionalProperties": false,
      "required": ["at"],
      "properties": {"at": {"type": "string", "format": "even"}, "n": {"type": "integer"}}
    }
  }
}`

var schema = NewSchema([]byte(testSchema), map[string]func(any) bool{
	"even": func(v any) bool { s, ok := v.(string); return !ok || len(s)%2 == 0 },
})

// brief renders problems as "line:path:keyword[names]" for comparison.
func brief(ps Problems) string {
	var b []string
	for _, p := range ps {
		s := fmt.Sprintf("%d:%s:%s", p.Line, p.Field(), p.Keyword)
		if len(p.Names) > 0 {
			s += fmt.Sprint(p.Names)
		}
		b = append(b, s)
	}
	return strings.Join(b, " ")
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"name: x\nitems:\n  - at: ab\n", ""},
		// An absent required field is one problem, not also a type error.
		{"mode: a\n", "1::required[name items]"},
		{"name: x\nitems: []\nbogus: 1\nother: 2\n", "3:bogus:additionalProperties[bogus] 4:other:additionalProperties[other]"},
		{"name: x\nmode: c\nitems:\n  - at: ab\n  - {at: abc, n: 1.5}\n", "2:mode:enum 5:items[1].at:format 5:items[1].n:type"},
		{"name: x\nitems:\n  - {n: 1, zz: 2}\n", "3:items[0]:required[at] 3:items[0].zz:additionalProperties[zz]"},
		{"name: x\nitems: [{at: ab}, {at: ab}, {at: ab}]\n", "2:items:maxItems"},
		{"name: 7\nitems: []\n", "1:name:type"},
		// Unknown keys come from the document, whatever they hold.
		{"name: x\nitems: []\n\"\": 1\n\"a', 'b\": 2\n", `3:"":additionalProperties[] 4:a', 'b:additionalProperties[a', 'b]`},
		// A numeric key is a key, not an index.
		{"name: x\nitems:\n  - {at: ab, 7: z}\n1: y\n", "3:items[0].7:additionalProperties[7] 4:1:additionalProperties[1]"},
	} {
		doc, err := Parse([]byte(tc.doc), Limits{MaxValues: 100, MaxDepth: 10})
		if err != nil {
			t.Fatalf("%q: %v", tc.doc, err)
		}
		ps, err := schema.Validate(doc)
		if err != nil {
			t.Fatal(err)
		}
		if got := brief(ps); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.doc, got, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	lim := Limits{MaxValues: 50, MaxDepth: 4}
	for _, tc := range []struct{ doc, want string }{
		{"a: 1\nb: 2\na: 3\n", "3:a:duplicate"},
		{"? [1]\n: x\n", "1::key"},
		{"a: &x [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nb: [*x, *x, *x, *x, *x, *x]\n", "2:b:size"},
		{"a: &x {b: *x}\n", "1:a:size"},
		{"a: {b: {c: {d: {e: 1}}}}\n", "1:a:size"},
		{"a: 1\n---\nb: 2\n", "2::documents"},
		{"a: {<<: 5}\n", "1:a:key"},
	} {
		_, err := Parse([]byte(tc.doc), lim)
		var ps Problems
		if !errors.As(err, &ps) {
			t.Errorf("%q: got %v, want problems", tc.doc, err)
			continue
		}
		if got := brief(ps); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.doc, got, tc.want)
		}
	}
	var syn *SyntaxError
	if _, err := Parse([]byte("a: 1\nb: [\n"), lim); !errors.As(err, &syn) || syn.Line < 1 {
		t.Errorf("syntax: %v", err)
	}
	// A syntax error names the line of what it is about, from the parser
	// (numbered from 0 by yaml.v3) as from the scanner (issue 32 §6).
	for doc, line := range map[string]int{
		"redis:\n  url: redis://x\n  timeout: [1s\npolicy:\n  lease_cap: 30s\n": 3, // the unclosed [
		"steps:\n  - at: 0s\n    do: acquire\n   actor: A\n":                    2, // the block sequence
		"name: x\nbudget: 30s\n  bad: indent\n":                                 3, // scanner: already right
		"policy: [unclosed\n":                                                   1, // not the line past the end
		"a: {b: 1\nc: 2\n":                                                      2, // where the , is missing
	} {
		if _, err := Parse([]byte(doc), lim); !errors.As(err, &syn) || syn.Line != line {
			t.Errorf("%q: %v, want line %d", doc, err, line)
		}
	}
	// A byte that is not UTF-8 is reported at its line (the YAML parser
	// gives none).
	if _, err := Parse([]byte("a: 1\nb: \xff\n"), lim); !errors.As(err, &syn) || syn.Line != 2 || !strings.Contains(syn.Msg, "0xff is not UTF-8") {
		t.Errorf("not UTF-8: %v", err)
	}
	// So is a control character YAML does not allow; tabs and CRLF pass.
	if _, err := Parse([]byte("a: 1\r\n\tb: 2\n\nc: \x1b[31m\n"), lim); !errors.As(err, &syn) || syn.Line != 4 || !strings.Contains(syn.Msg, "0x1b is not allowed") {
		t.Errorf("control character: %v", err)
	}
	if _, err := Parse([]byte("a: é\u00a0ok\n"), lim); err != nil {
		t.Errorf("NBSP: %v", err)
	}
	if _, err := Parse([]byte("# only a comment\n"), lim); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
}

// mergeBomb is the issue 33 file: six levels of a merge key taking 20
// aliases of the level below, 20^6 entries from under 600 bytes.
func mergeBomb() []byte {
	var b strings.Builder
	b.WriteString("a: &a {x: 1, y: 2, z: 3}\n")
	names := "abcdefg"
	for i := 1; i < len(names); i++ {
		alias := strings.Repeat("*"+names[i-1:i]+", ", 19) + "*" + names[i-1:i]
		fmt.Fprintf(&b, "%c: &%c\n  <<: [%s]\n", names[i], names[i], alias)
	}
	return []byte(b.String())
}

// TestParseMergeBomb: the bomb is a "size" problem, found by counting, not
// by expanding it (before, Parse ran for minutes and grew past 1 GB).
func TestParseMergeBomb(t *testing.T) {
	data := mergeBomb()
	if len(data) > 700 {
		t.Fatalf("bomb is %d bytes", len(data))
	}
	done := make(chan error, 1)
	go func() {
		_, err := Parse(data, Limits{MaxValues: 100000, MaxDepth: 50})
		done <- err
	}()
	select {
	case err := <-done:
		var ps Problems
		if !errors.As(err, &ps) || ps[0].Keyword != "size" {
			t.Fatalf("got %v, want a size problem", err)
		}
	case <-time.After(30 * time.Second): // the fixed Parse takes microseconds; the old one minutes
		t.Fatal("Parse still expanding the merge-key bomb after 30s")
	}
	// Shared aliases within the limit still parse: counted once per use, costed once.
	if _, err := Parse([]byte("a: &a {x: 1}\nb: {<<: [*a, *a]}\nc: [*a, *a, *a]\n"), Limits{MaxValues: 50, MaxDepth: 10}); err != nil {
		t.Errorf("small merge: %v", err)
	}
}

func TestLineAndNode(t *testing.T) {
	doc, err := Parse([]byte("name: x\nitems:\n  - at: ab\n    n: 2\n"), Limits{MaxValues: 100, MaxDepth: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path Path
		line int
	}{{nil, 1}, {Path{"items"}, 2}, {Path{"items", "0"}, 3}, {Path{"items", "0", "n"}, 4}, {Path{"items", "0", "missing"}, 3}} {
		if got := doc.Line(tc.path); got != tc.line {
			t.Errorf("Line(%v) = %d, want %d", tc.path, got, tc.line)
		}
	}
	if n := doc.Node(Path{"items", "0", "n"}); n == nil || n.Value != "2" {
		t.Errorf("Node = %v", n)
	}
	if got := schema.Properties(Path{"items", "0"}); strings.Join(got, ",") != "at,n" {
		t.Errorf("Properties(items[0]) = %v", got)
	}
	for _, tc := range []struct {
		path Path
		def  string
	}{{Path{"items", "1"}, "item"}, {Path{"items"}, ""}, {Path{"items", "0", "at"}, ""}, {Path{"nope", "0"}, ""}, {nil, ""}} {
		if got := schema.Def(tc.path); got != tc.def {
			t.Errorf("Def(%v) = %q, want %q", tc.path, got, tc.def)
		}
	}
	if got := doc.Name(Path{"items", "0", "at"}); got != "items[0].at" {
		t.Errorf("Name = %q", got)
	}
}

// Merge keys and aliases are expanded in Value and in Root: explicit keys
// win over merged ones, the first merged mapping over later ones.
func TestMergeAndAlias(t *testing.T) {
	doc, err := Parse([]byte("base: &b {at: ab, n: 1}\nmore: &m {n: 2, k: 3}\nitems:\n  - *b\n  - {<<: [*b, *m], at: cd}\n"), Limits{MaxValues: 100, MaxDepth: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(doc.Value.(map[string]any)["items"])
	if want := "[map[at:ab n:1] map[at:cd k:3 n:1]]"; got != want {
		t.Errorf("items = %s, want %s", got, want)
	}
	var fromRoot struct{ Items []map[string]any }
	if err := doc.Root.Decode(&fromRoot); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(fromRoot.Items); got != "[map[at:ab n:1] map[at:cd k:3 n:1]]" {
		t.Errorf("Root decodes to %s", got)
	}
	if n := doc.Node(Path{"items", "1", "k"}); n == nil || n.Value != "3" {
		t.Errorf("Node(items[1].k) = %v", n)
	}
}

// .inf and .nan stay text (JSON has no such number) but are described as
// what they are.
func TestNonFinite(t *testing.T) {
	for _, text := range []string{".inf", "-.Inf", ".nan"} {
		doc, err := Parse([]byte("name: x\nitems:\n  - {at: ab, n: "+text+"}\n"), Limits{MaxValues: 100, MaxDepth: 10})
		if err != nil {
			t.Fatal(err)
		}
		ps, err := schema.Validate(doc)
		if err != nil || len(ps) != 1 {
			t.Fatalf("%s: %v %v", text, ps, err)
		}
		if got, want := ps[0].Got(), text+" (not a finite number)"; got != want {
			t.Errorf("Got = %q, want %q", got, want)
		}
	}
	doc, _ := Parse([]byte("name: x\nitems: [{at: ab, n: \".inf\"}]\n"), Limits{MaxValues: 100, MaxDepth: 10})
	if ps, _ := schema.Validate(doc); len(ps) != 1 || ps[0].Got() != `".inf" (a string)` {
		t.Errorf("a quoted .inf: %v", ps)
	}
}

func TestBadSchema(t *testing.T) {
	doc, _ := Parse([]byte("a: 1\n"), Limits{MaxValues: 10, MaxDepth: 10})
	if _, err := NewSchema([]byte(`{"type": `), nil).Validate(doc); err == nil {
		t.Error("a schema that is not JSON compiled")
	}
}
