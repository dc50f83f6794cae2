package store

import (
	"context"
	"fmt"
	"strings"
	"unicode"
)

// SchemaError is a schema statement the server refused: Line is the 1-based
// line in the schema file (where the server pointed inside the statement
// when it said, else where the statement starts). It wraps ErrInput.
type SchemaError struct {
	Line int
	Err  error
}

func (e *SchemaError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *SchemaError) Unwrap() []error {
	return []error{ErrInput, e.Err}
}

// ApplySchema runs a multi-statement schema in the scratch database, one
// statement at a time on one session (so SET and transactions carry over).
// Statements end at a semicolon outside quotes, comments, PostgreSQL dollar
// quotes and the BEGIN … END body of a CREATE TRIGGER/FUNCTION/PROCEDURE
// (MySQL's client-side DELIMITER is not needed and not understood). It
// returns a *SchemaError for the first statement the server refuses.
func (s *Scratch) ApplySchema(ctx context.Context, sql string) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return s.scrub(fmt.Errorf("connect to %s: %w", s.name, err))
	}
	defer conn.Close()
	for _, st := range splitStatements(sql, s.kind) {
		if _, err := conn.ExecContext(ctx, st.text); err != nil {
			if !s.refused(err) {
				return s.scrub(fmt.Errorf("schema line %d: %w", st.line, err))
			}
			return &SchemaError{Line: st.line + s.linesInto(st.text, err), Err: s.scrub(err)}
		}
	}
	return nil
}

// refused reports whether the server refused a statement (bad SQL, a
// constraint), rather than the connection failing.
func (s *Scratch) refused(err error) bool {
	switch s.kind {
	case postgres:
		return isPgServerError(err)
	case mysqlKind:
		return isMySQLServerError(err)
	}
	return isSQLiteError(err)
}

// linesInto returns how many lines into text the server's error points
// (0 when it does not say where).
func (s *Scratch) linesInto(text string, err error) int {
	switch s.kind {
	case postgres:
		if pos := pgErrorOffset(err); pos > 0 {
			r := []rune(text)
			return strings.Count(string(r[:min(pos-1, len(r))]), "\n")
		}
	case mysqlKind:
		if n := mysqlErrorLine(err); n > 0 {
			return n - 1
		}
	}
	return 0
}

// statement is one statement of a schema and the 1-based line it starts on.
type statement struct {
	text string
	line int
}

// splitStatements cuts a schema into statements, dropping empty ones.
func splitStatements(src string, k kind) []statement {
	sp := splitter{src: src, kind: k, line: 1}
	return sp.run()
}

// splitter is a one-pass scanner over a schema's text.
type splitter struct {
	src     string
	kind    kind
	i       int // byte offset
	line    int // line of offset i
	out     []statement
	start   int    // offset of the current statement's first token
	first   int    // line of that token, 0 while the statement has none
	nwords  int    // words read in the current statement
	prev    string // the last word read, upper case
	create  bool   // the statement's first word is CREATE
	routine bool   // ... and it creates a trigger or routine
	depth   int    // open BEGIN/CASE blocks inside a routine body
}

func (p *splitter) run() []statement {
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == '\n':
			p.line++
			p.i++
		case c == '-' && strings.HasPrefix(p.src[p.i:], "--"),
			c == '#' && p.kind == mysqlKind:
			p.skipUntil("\n", false)
		case c == '/' && strings.HasPrefix(p.src[p.i:], "/*"):
			p.i += 2
			p.skipUntil("*/", true)
		case c == '\'' || c == '"' || c == '`':
			p.token()
			p.i++
			p.skipQuoted(c)
		case c == '$' && p.kind == postgres && p.dollarTag() != "":
			p.token()
			tag := p.dollarTag()
			p.i += len(tag)
			p.skipUntil(tag, true)
		case c == ';' && p.depth <= 0:
			p.i++
			p.end()
		case isWordByte(c):
			p.token()
			p.word()
		default:
			if !unicode.IsSpace(rune(c)) {
				p.token()
			}
			p.i++
		}
	}
	p.end()
	return p.out
}

// token notes that the current statement has begun at offset i.
func (p *splitter) token() {
	if p.first == 0 {
		p.first, p.start = p.line, p.i
	}
}

// end closes the current statement, if it has any token. Its text starts at
// its first token, so that a line counted inside it adds to its line.
func (p *splitter) end() {
	if p.first != 0 {
		text := strings.TrimSpace(p.src[p.start:p.i])
		text = strings.TrimSpace(strings.TrimSuffix(text, ";"))
		p.out = append(p.out, statement{text: text, line: p.first})
	}
	p.first, p.nwords, p.prev, p.routine, p.depth = 0, 0, "", false, 0
}

// word reads an identifier or keyword and tracks routine bodies: in a
// CREATE TRIGGER/FUNCTION/PROCEDURE/EVENT, BEGIN and CASE open a block and
// END closes one (END IF/LOOP/WHILE/REPEAT close blocks not counted).
func (p *splitter) word() {
	j := p.i
	for j < len(p.src) && isWordByte(p.src[j]) {
		j++
	}
	w := strings.ToUpper(p.src[p.i:j])
	p.i = j
	prev := p.prev
	p.prev = w
	p.nwords++
	switch {
	case p.nwords == 1:
		p.create = w == "CREATE"
		return
	case !p.routine:
		switch w {
		case "TRIGGER", "FUNCTION", "PROCEDURE", "EVENT":
			p.routine = p.create
		case "TABLE", "VIEW", "INDEX", "TYPE", "DOMAIN", "SEQUENCE", "SCHEMA":
			p.create = false // CREATE TABLE event (…) creates no routine
		}
		return
	}
	switch w {
	case "BEGIN", "CASE":
		if prev == "END" && w == "CASE" {
			return // END CASE closed the CASE already
		}
		p.depth++
	case "END":
		p.depth--
	case "IF", "LOOP", "WHILE", "REPEAT":
		if prev == "END" {
			p.depth++ // undo: that END closed a block not counted
		}
	}
}

// skipQuoted skips past the closing quote q (doubled quotes stay inside;
// MySQL also escapes with a backslash).
func (p *splitter) skipQuoted(q byte) {
	for p.i < len(p.src) {
		c := p.src[p.i]
		p.i++
		switch {
		case c == '\n':
			p.line++
		case c == '\\' && p.kind == mysqlKind && q != '`' && p.i < len(p.src):
			if p.src[p.i] == '\n' {
				p.line++
			}
			p.i++
		case c == q:
			if p.i < len(p.src) && p.src[p.i] == q {
				p.i++
				continue
			}
			return
		}
	}
}

// skipUntil moves past the next end (or to the end of the text), counting
// lines; past says whether end itself is skipped.
func (p *splitter) skipUntil(end string, past bool) {
	k := strings.Index(p.src[p.i:], end)
	stop := len(p.src)
	if k >= 0 {
		stop = p.i + k
		if past {
			stop += len(end)
		}
	}
	p.line += strings.Count(p.src[p.i:stop], "\n")
	p.i = stop
}

// dollarTag returns the PostgreSQL dollar-quote opener at i ($$ or $tag$),
// or "" ($1 is a parameter, not a quote).
func (p *splitter) dollarTag() string {
	j := p.i + 1
	for j < len(p.src) && (isWordByte(p.src[j]) && !(j == p.i+1 && p.src[j] >= '0' && p.src[j] <= '9')) {
		j++
	}
	if j < len(p.src) && p.src[j] == '$' {
		return p.src[p.i : j+1]
	}
	return ""
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
