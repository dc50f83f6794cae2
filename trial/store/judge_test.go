package store_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/trial/store"
)

// The writes table of a trial whose fence check and idempotency key both
// failed: on "a", fence 3 committed after fence 5; "k1" committed twice.
const judgeSchema = `CREATE TABLE writes (id INTEGER PRIMARY KEY, fence BIGINT, k VARCHAR(64), res VARCHAR(64));
INSERT INTO writes VALUES (1, 5, 'k1', 'a');
INSERT INTO writes VALUES (2, 3, 'k2', 'a');
INSERT INTO writes VALUES (3, 4, 'k1', 'b');
INSERT INTO writes VALUES (4, NULL, NULL, 'b');
INSERT INTO writes VALUES (5, 5, 'k3', 'a');
CREATE TABLE balance (account VARCHAR(8), amount INTEGER, ledger INTEGER);
INSERT INTO balance VALUES ('acc-1', 100, 100);
INSERT INTO balance VALUES ('acc-2', 70, 90);`

func TestJudge(t *testing.T) {
	t.Parallel()
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			s := open(t, srv)
			ctx := context.Background()
			if err := s.ApplySchema(ctx, judgeSchema); err != nil {
				t.Fatalf("ApplySchema: %v", err)
			}
			got, err := s.Judge(ctx,
				`SELECT fence, k AS "key", res AS resource FROM writes ORDER BY id`,
				`SELECT account, amount, ledger FROM balance WHERE amount <> ledger`)
			if err != nil {
				t.Fatalf("Judge: %v", err)
			}
			three, k1 := int64(3), "k1"
			want := []store.Violation{
				{Code: history.CodeStaleWrite, Fence: &three, Resource: "a",
					Detail: `write 2 on "a" has fence 3, committed after write 1 with fence 5`,
					Rows:   [][]string{{"5", "k1", "a"}, {"3", "k2", "a"}}},
				{Code: history.CodeDuplicate, Key: &k1, Resource: "a",
					Detail: `key "k1" committed 2 times (writes 1, 3)`,
					Rows:   [][]string{{"5", "k1", "a"}, {"4", "k1", "b"}}},
				{Code: history.CodeInvariant,
					Detail: "the check query returned 1 row (account, amount, ledger)",
					Rows:   [][]string{{"acc-2", "70", "90"}}},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Judge =\n%s\nwant\n%s", show(got), show(want))
			}

			// Without a resource column every write is on one resource.
			got, err = s.Judge(ctx, `SELECT fence FROM writes ORDER BY id`, "")
			if err != nil || len(got) != 2 || got[1].Detail != "write 3 has fence 4, committed after write 1 with fence 5" {
				t.Errorf("one resource: %s (err %v)", show(got), err)
			}
			// A clean history and an empty check: nothing.
			got, err = s.Judge(ctx, `SELECT fence, k AS "key" FROM writes WHERE id = 1`, `SELECT * FROM balance WHERE 1 = 0`)
			if err != nil || len(got) != 0 {
				t.Errorf("clean: %s (err %v)", show(got), err)
			}
		})
	}
}

func TestJudgeBadInput(t *testing.T) {
	t.Parallel()
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			s := open(t, srv)
			ctx := context.Background()
			if err := s.ApplySchema(ctx, judgeSchema); err != nil {
				t.Fatalf("ApplySchema: %v", err)
			}
			for _, tc := range []struct{ history, check, want string }{
				{"SELECT id, fence, k FROM writes", "", "the history query returns columns (id, fence, k); expected fence and key"},
				{"SELECT res AS resource FROM writes", "", "the history query returns columns (resource); expected fence and key"},
				{`SELECT k AS fence FROM writes`, "", `history row 1: fence "k1" is not an integer`},
				{"SELECT fence FROM nowhere", "", "the history query: "},
				{"", "SELEC 1", "the check query must only read"},
				{"", "SELECT 1 FROM nowhere", "the check query: "},
				{"DELETE FROM writes RETURNING fence", "", "the history query must only read: start it with SELECT, WITH, VALUES or TABLE"},
				{"DROP TABLE writes", "", "the history query must only read"},
				// A write behind a leading WITH: the read-only transaction refuses it
				// (MariaDB refuses the syntax).
				{"WITH x AS (SELECT 1) DELETE FROM writes RETURNING fence", "", "the history query: "},
				{"", "WITH x AS (SELECT 1) DELETE FROM balance RETURNING amount", "the check query: "},
			} {
				_, err := s.Judge(ctx, tc.history, tc.check)
				if err == nil || !errors.Is(err, store.ErrInput) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Judge(%q, %q) = %v, want ErrInput with %q", tc.history, tc.check, err, tc.want)
				}
			}
			// Judging changed nothing: every write and balance row is still there.
			got, err := s.Judge(ctx, "", "SELECT n FROM (SELECT (SELECT count(*) FROM writes) + (SELECT count(*) FROM balance) AS n) c WHERE n <> 7")
			if err != nil || len(got) != 0 {
				t.Errorf("after the refused writes: %s (err %v), want the 7 rows of the schema", show(got), err)
			}
			// Before the workers: the schema's own stale write is refused as input.
			err = s.CheckQueries(ctx, `SELECT fence FROM writes ORDER BY id`, "")
			if !errors.Is(err, store.ErrInput) || !strings.Contains(err.Error(), "before any worker ran, STALE_WRITE_ACCEPTED: write 2 has fence 3") {
				t.Errorf("CheckQueries on a stale history = %v, want ErrInput naming the stale write", err)
			}
			if err := s.CheckQueries(ctx, `SELECT fence FROM writes WHERE id = 1`, `SELECT 1 FROM balance WHERE 1 = 0`); err != nil {
				t.Errorf("CheckQueries on a clean history = %v, want nil", err)
			}
		})
	}
}

func show(vs []store.Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("  " + v.Code + ": " + v.Detail)
		if v.Fence != nil {
			b.WriteString(" fence=" + strconv.FormatInt(*v.Fence, 10))
		}
		if v.Key != nil {
			b.WriteString(" key=" + *v.Key)
		}
		b.WriteString(" resource=" + v.Resource + " rows=")
		for _, r := range v.Rows {
			b.WriteString("[" + strings.Join(r, "|") + "]")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestJudgeQueryForms: a query pasted with comments before its SELECT is
// judged; one that carries a second statement is refused before it is sent,
// and on the server too, whatever the --store URL asks of the driver
// (MySQL's multiStatements, pgx's simple protocol).
func TestJudgeQueryForms(t *testing.T) {
	t.Parallel()
	variants := append([]server{}, servers...)
	variants = append(variants,
		server{"postgres-simple-protocol", func(t *testing.T) string {
			return servers[0].url(t) + "&default_query_exec_mode=simple_protocol"
		}},
		server{"mysql-multi-statements", func(t *testing.T) string { return servers[1].url(t) + "?multiStatements=true" }},
	)
	for _, srv := range variants {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			s := open(t, srv)
			ctx := context.Background()
			if err := s.ApplySchema(ctx, judgeSchema); err != nil {
				t.Fatalf("ApplySchema: %v", err)
			}
			read := []string{
				"-- the writes, in commit order\nSELECT fence FROM writes WHERE id = 1",
				"/* one row */ SELECT fence FROM writes WHERE id = 1",
				"\n  -- a\n  -- b\n  select fence from writes where id = 1;\n",
			}
			if srv.name != "sqlite" { // SQLite takes no parenthesis before a SELECT
				read = append(read, "( /* c */ SELECT fence FROM writes WHERE id = 1)")
			}
			if strings.HasPrefix(srv.name, "mysql") {
				read = append(read, "# MySQL's comment\nSELECT fence FROM writes WHERE id = 1")
			}
			for _, q := range read {
				if got, err := s.Judge(ctx, q, ""); err != nil || len(got) != 0 {
					t.Errorf("Judge(%q) = %s, %v; want no violation", q, show(got), err)
				}
			}
			for _, tc := range []struct{ history, want string }{
				{"SELECT fence FROM writes; DROP TABLE balance", "the history query has 2 statements; give one"},
				{"SELECT fence FROM writes; DELETE FROM writes", "the history query has 2 statements; give one"},
				{"-- only a comment", "the history query has no statement"},
				{"-- x\nDELETE FROM writes", `start it with SELECT, WITH, VALUES or TABLE, not "DELETE"`},
				// PostgreSQL reads x$a$ as a name, not a dollar quote: only the
				// server can tell where its statements end.
				{"SELECT 1 AS x$a$; COMMIT; DELETE FROM writes; SELECT 1 AS fence --$a$", "the history query"},
			} {
				if _, err := s.Judge(ctx, tc.history, ""); !errors.Is(err, store.ErrInput) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Judge(%q) = %v, want ErrInput with %q", tc.history, err, tc.want)
				}
			}
			if strings.HasPrefix(srv.name, "mysql") {
				// An executable comment is MySQL's code, not a comment.
				q := "/*! DROP TABLE balance */ SELECT 1 AS fence"
				if _, err := s.Judge(ctx, q, ""); !errors.Is(err, store.ErrInput) || !strings.Contains(err.Error(), `not "/*!"`) {
					t.Errorf("Judge(%q) = %v, want ErrInput naming /*!", q, err)
				}
			}
			got, err := s.Judge(ctx, "", "SELECT n FROM (SELECT (SELECT count(*) FROM writes) + (SELECT count(*) FROM balance) AS n) c WHERE n <> 7")
			if err != nil || len(got) != 0 {
				t.Errorf("after the refused queries: %s (err %v), want the 7 rows of the schema", show(got), err)
			}
		})
	}
}
