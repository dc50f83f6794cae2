package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/lockctl/lockctl/history"

	"github.com/lockctl/lockctl/trial/storeapi"
)

// maxCheckRows bounds the rows one history.CodeInvariant carries; Detail still
// gives the full count.
const maxCheckRows = 100

// Violation is storeapi.Violation, which cmd reads without linking the
// drivers.
type Violation = storeapi.Violation

// Judge runs the history and the check query (either may be "") in the
// scratch database and returns what they show, in history order then check
// order:
//   - historySQL returns the committed writes in commit order, with columns
//     fence (integer, nullable), key (text, nullable) and optionally
//     resource (nullable; NULL and absent mean one resource); names are
//     matched case-insensitively and either fence or key may be left out.
//     A fence lower than an earlier fence of the same resource is
//     history.CodeStaleWrite (NULL fences are not compared); a key seen
//     before is history.CodeDuplicate, once per key;
//   - every row checkSQL returns is history.CodeInvariant, one violation for all.
//
// Both run in one read-only transaction that is rolled back, on PostgreSQL
// and MySQL as the judge's role, which may only read the scratch database
// (judgerole.go): judging reads the evidence and never changes it.
//
// Errors wrap ErrInput when a query is not one statement starting (after
// comments) with SELECT, WITH, VALUES or TABLE, tries to write, is refused
// by the server, the history has other columns (the message names the
// expected ones) or a fence is not an integer.
func (s *Scratch) Judge(ctx context.Context, historySQL, checkSQL string) ([]Violation, error) {
	if s.kind == postgres && s.judgeRole != "" {
		if err := s.pgJudgeGrants(ctx); err != nil {
			return nil, s.scrub(fmt.Errorf("grant the judge's role SELECT in %s: %w", s.name, err))
		}
	}
	var out []Violation
	err := s.readOnly(ctx, func(q querier) error {
		if strings.TrimSpace(historySQL) != "" {
			v, err := s.judgeHistory(ctx, q, historySQL)
			if err != nil {
				return err
			}
			out = append(out, v...)
		}
		if strings.TrimSpace(checkSQL) != "" {
			cols, rows, total, err := s.query(ctx, q, "check", checkSQL, maxCheckRows)
			if err != nil {
				return err
			}
			if total > 0 {
				out = append(out, Violation{Code: history.CodeInvariant, Rows: textRows(rows),
					Detail: fmt.Sprintf("the check query returned %d row%s (%s)", total, plural(total), strings.Join(cols, ", "))})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CheckQueries judges the scratch database once before the workers start,
// so that bad SQL or a history with the wrong columns is refused at once
// rather than after the whole trial. It returns Judge's errors, and one
// wrapping ErrInput when a query already shows a violation: the schema
// alone breaks the invariant, so no run could be judged safe.
func (s *Scratch) CheckQueries(ctx context.Context, historySQL, checkSQL string) error {
	vs, err := s.Judge(ctx, historySQL, checkSQL)
	if err != nil {
		return err
	}
	if len(vs) > 0 {
		return inputErrorf("before any worker ran, %s: %s; the schema alone shows it, so every run would be unsafe", vs[0].Code, vs[0].Detail)
	}
	return nil
}

// write is one history row: its write record, its 1-based row number and
// its values as text.
type write struct {
	history.Write
	n    int
	text []string
}

func (s *Scratch) judgeHistory(ctx context.Context, q querier, historySQL string) ([]Violation, error) {
	cols, rows, _, err := s.query(ctx, q, "history", historySQL, math.MaxInt)
	if err != nil {
		return nil, err
	}
	idx := map[string]int{}
	for i, c := range cols {
		lc := strings.ToLower(c)
		if _, dup := idx[lc]; dup || (lc != "fence" && lc != "key" && lc != "resource") {
			return nil, inputErrorf("the history query returns columns (%s); expected fence and key (either may be left out) and optionally resource, each once", strings.Join(cols, ", "))
		}
		idx[lc] = i
	}
	_, hasFence := idx["fence"]
	_, hasKey := idx["key"]
	if !hasFence && !hasKey {
		return nil, inputErrorf("the history query returns columns (%s); expected fence and key (either may be left out) and optionally resource", strings.Join(cols, ", "))
	}
	writes := make([]write, len(rows))
	for n, r := range rows {
		w := write{n: n + 1, text: textRow(r)}
		if i, ok := idx["fence"]; ok && r[i] != nil {
			f, err := toInt64(r[i])
			if err != nil {
				return nil, inputErrorf("history row %d: fence %q is not an integer", n+1, textValue(r[i]))
			}
			w.Fence = &f
		}
		if i, ok := idx["key"]; ok && r[i] != nil {
			k := textValue(r[i])
			w.Key = &k
		}
		if i, ok := idx["resource"]; ok && r[i] != nil {
			w.Resource = textValue(r[i])
		}
		writes[n] = w
	}
	return append(staleWrites(writes), duplicateKeys(writes)...), nil
}

// staleWrites finds writes whose fence is below the highest fence already
// committed for their resource (history.StaleWrites).
func staleWrites(writes []write) []Violation {
	var out []Violation
	for _, st := range history.StaleWrites(historyWrites(writes)) {
		w, h := writes[st.Write], writes[st.After]
		on := ""
		if w.Resource != "" {
			on = fmt.Sprintf(" on %q", w.Resource)
		}
		out = append(out, Violation{Code: history.CodeStaleWrite, Fence: w.Fence, Resource: w.Resource,
			Rows:   [][]string{h.text, w.text},
			Detail: fmt.Sprintf("write %d%s has fence %d, committed after write %d with fence %d", w.n, on, *w.Fence, h.n, *h.Fence)})
	}
	return out
}

// duplicateKeys finds idempotency keys committed more than once
// (history.DuplicateKeys): one violation per key, at its second write.
func duplicateKeys(writes []write) []Violation {
	dups := history.DuplicateKeys(historyWrites(writes))
	out := make([]Violation, 0, len(dups))
	for _, idx := range dups {
		n := make([]string, len(idx))
		rows := make([][]string, len(idx))
		for i, j := range idx {
			n[i], rows[i] = strconv.Itoa(writes[j].n), writes[j].text
		}
		first := writes[idx[0]]
		out = append(out, Violation{Code: history.CodeDuplicate, Key: first.Key, Resource: first.Resource, Rows: rows,
			Detail: fmt.Sprintf("key %q committed %d times (writes %s)", *first.Key, len(idx), strings.Join(n, ", "))})
	}
	return out
}

// historyWrites is the history rows as history's write records.
func historyWrites(writes []write) []history.Write {
	out := make([]history.Write, len(writes))
	for i, w := range writes {
		out[i] = w.Write
	}
	return out
}

// querier is a read-only transaction (*sql.Tx) that the user's queries run in.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readWord is the first word of a query that only reads, in all three
// dialects, once leading comments and parentheses are skipped.
var readWord = regexp.MustCompile(`(?i)^(select|with|values|table)\b`)

// checkRead refuses a query that is not one statement starting with
// SELECT, WITH, VALUES or TABLE. The read-only transaction refuses writes,
// but not MySQL's DDL, which commits implicitly and would run, nor what a
// second statement does after a COMMIT of its own.
func (s *Scratch) checkRead(what, q string) error {
	switch sts := splitStatements(q, s.kind); len(sts) {
	case 0:
		return inputErrorf("the %s query has no statement, only comments", what)
	case 1:
	default:
		return inputErrorf("the %s query has %d statements; give one, a SELECT", what, len(sts))
	}
	rest := skipLeading(q, s.kind)
	if !readWord.MatchString(rest) {
		word, _, _ := strings.Cut(strings.Join(strings.Fields(rest), " "), " ")
		if r := []rune(word); len(r) > 24 {
			word = string(r[:24]) + "..."
		}
		return inputErrorf("the %s query must only read: start it with SELECT, WITH, VALUES or TABLE, not %q", what, word)
	}
	return nil
}

// skipLeading returns q past its leading white space, parentheses and
// comments, as the server reads them: MySQL's -- needs a space after it,
// its # is a comment and its /*! and /*M! are code (so they stop here);
// PostgreSQL's /* */ nest.
func skipLeading(q string, k kind) string {
	for {
		q = strings.TrimLeftFunc(q, func(r rune) bool { return unicode.IsSpace(r) || r == '(' })
		switch {
		case strings.HasPrefix(q, "--") && (k != mysqlKind || len(q) == 2 || q[2] <= ' '),
			strings.HasPrefix(q, "#") && k == mysqlKind:
			_, q, _ = strings.Cut(q, "\n")
		case strings.HasPrefix(q, "/*") && (k != mysqlKind || !strings.HasPrefix(q, "/*!") && !strings.HasPrefix(q, "/*M!")):
			q = pastComment(q, k == postgres)
		default:
			return q
		}
	}
}

// pastComment returns what follows the block comment q starts with ("" when
// it is not closed).
func pastComment(q string, nested bool) string {
	depth := 0
	for i := 0; i+1 < len(q); i++ {
		switch {
		case q[i] == '/' && q[i+1] == '*' && (nested || depth == 0):
			depth++
			i++
		case q[i] == '*' && q[i+1] == '/':
			if depth--; depth == 0 {
				return q[i+2:]
			}
			i++
		}
	}
	return ""
}

// readOnly runs fn in a transaction that cannot write, then rolls it back.
// PostgreSQL and MySQL take BEGIN READ ONLY; SQLite has no such
// transaction, so its connection is switched to PRAGMA query_only for fn.
func (s *Scratch) readOnly(ctx context.Context, fn func(querier) error) error {
	db := s.db
	if s.judgeDB != nil {
		db = s.judgeDB
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return s.scrub(fmt.Errorf("connect to %s: %w", s.name, err))
	}
	defer conn.Close()
	if s.kind == sqliteKind {
		if _, err := conn.ExecContext(ctx, "PRAGMA query_only = ON"); err != nil {
			return s.scrub(fmt.Errorf("sqlite %s: %w", s.name, err))
		}
		// The pool keeps this connection: it must write again for the next schema.
		defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA query_only = OFF") }()
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: s.kind != sqliteKind})
	if err != nil {
		return s.scrub(fmt.Errorf("begin a read-only transaction in %s: %w", s.name, err))
	}
	defer func() { _ = tx.Rollback() }()
	return fn(tx)
}

// query runs one of the user's queries and returns its column names, up to
// max rows (values as the driver gives them) and the total row count.
func (s *Scratch) query(ctx context.Context, tx querier, what, q string, max int) ([]string, [][]any, int, error) {
	if err := s.checkRead(what, q); err != nil {
		return nil, nil, 0, err
	}
	var args []any
	if s.kind == postgres {
		args = append(args, pgOneStatement)
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, 0, s.queryErr(what, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, 0, s.queryErr(what, err)
	}
	var out [][]any
	total := 0
	for rows.Next() {
		total++
		if len(out) >= max {
			continue
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, 0, s.queryErr(what, err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, 0, s.queryErr(what, err)
	}
	return cols, out, total, nil
}

// queryErr says which query failed; a refusal by the server is the user's
// SQL, hence ErrInput.
func (s *Scratch) queryErr(what string, err error) error {
	if s.refused(err) {
		return s.scrub(inputErrorf("the %s query: %v", what, err))
	}
	return s.scrub(fmt.Errorf("the %s query: %w", what, err))
}

// toInt64 reads an integer fence from whatever the driver returned: int64
// (pgx, SQLite), []byte (MySQL's text protocol), a numeric's text or an
// integral float.
func toInt64(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x), nil
		}
	case []byte, string:
		t := strings.TrimSpace(textValue(x))
		if n, err := strconv.ParseInt(t, 10, 64); err == nil {
			return n, nil
		}
		if f, err := strconv.ParseFloat(t, 64); err == nil {
			return toInt64(f)
		}
	}
	return 0, fmt.Errorf("not an integer: %v", v)
}

// textValue renders one value as text: NULL, bytes as a string, times in
// RFC 3339.
func textValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return string(x)
	case string:
		return x
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

func textRow(r []any) []string {
	out := make([]string, len(r))
	for i, v := range r {
		out[i] = textValue(v)
	}
	return out
}

func textRows(rows [][]any) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = textRow(r)
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
