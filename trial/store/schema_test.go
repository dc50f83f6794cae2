package store

import (
	"reflect"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		kind kind
		src  string
		want []statement
	}{
		{"lines and comments", sqliteKind,
			"-- head; here\n\nCREATE TABLE a (x TEXT DEFAULT 'a;b');\n/* multi\n;line */ INSERT INTO a VALUES ('it''s;');;\n  \nSELECT 1",
			[]statement{{"CREATE TABLE a (x TEXT DEFAULT 'a;b')", 3}, {"INSERT INTO a VALUES ('it''s;')", 5}, {"SELECT 1", 7}}},
		{"dollar quotes, not parameters", postgres,
			"CREATE FUNCTION f() RETURNS int AS $fn$ SELECT 1; $fn$ LANGUAGE sql;\nPREPARE p AS SELECT $1::int;\nDO $$ BEGIN PERFORM 1; END $$;",
			[]statement{{"CREATE FUNCTION f() RETURNS int AS $fn$ SELECT 1; $fn$ LANGUAGE sql", 1}, {"PREPARE p AS SELECT $1::int", 2}, {"DO $$ BEGIN PERFORM 1; END $$", 3}}},
		{"mysql escapes and hash comments", mysqlKind,
			"# a comment;\nINSERT INTO t VALUES ('a\\';b', `c;d`);\nSELECT \"x;\"",
			[]statement{{"INSERT INTO t VALUES ('a\\';b', `c;d`)", 2}, {"SELECT \"x;\"", 3}}},
		{"a table named event is not a routine", mysqlKind,
			"CREATE TABLE event (id INT, begin INT);\nSELECT 1;",
			[]statement{{"CREATE TABLE event (id INT, begin INT)", 1}, {"SELECT 1", 2}}},
		{"a transaction is not a routine body", postgres,
			"BEGIN;\nINSERT INTO t VALUES (1);\nEND;",
			[]statement{{"BEGIN", 1}, {"INSERT INTO t VALUES (1)", 2}, {"END", 3}}},
		{"routine with END IF, END CASE and END LOOP", mysqlKind,
			"CREATE PROCEDURE p() BEGIN\n IF 1 THEN SELECT 1; END IF;\n CASE 1 WHEN 1 THEN SELECT 2; END CASE;\n l: LOOP LEAVE l; END LOOP;\nEND;\nSELECT 3;",
			[]statement{{"CREATE PROCEDURE p() BEGIN\n IF 1 THEN SELECT 1; END IF;\n CASE 1 WHEN 1 THEN SELECT 2; END CASE;\n l: LOOP LEAVE l; END LOOP;\nEND", 1}, {"SELECT 3", 6}}},
	} {
		if got := splitStatements(tc.src, tc.kind); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}
