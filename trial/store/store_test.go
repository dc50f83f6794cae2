package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/trial/store"
)

func TestOpenDrop(t *testing.T) {
	t.Parallel()
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, err := store.Open(ctx, srv.url(t))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			base := filepath.Base(s.Name())
			if !strings.HasPrefix(base, store.NamePrefix) {
				t.Errorf("Name() = %q, want the prefix %s", s.Name(), store.NamePrefix)
			}
			if !strings.Contains(s.URL(), s.Name()) || !strings.HasPrefix(s.URL(), strings.SplitN(srv.url(t), ":", 2)[0]+":") {
				t.Errorf("URL() = %q, want the scheme given and %s", s.URL(), s.Name())
			}
			if !exists(t, srv, s.Name()) {
				t.Fatalf("%s was not created", s.Name())
			}
			// A worker reaches it from the URL alone, and what it writes is
			// what Judge reads.
			db := workerDB(t, srv, s)
			if _, err := db.Exec("CREATE TABLE t (n INTEGER)"); err != nil {
				t.Fatalf("worker: %v", err)
			}
			// A session still open (a worker killed mid-transaction) must not
			// stop the drop.
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec("INSERT INTO t VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			if srv.name == "sqlite" {
				_ = tx.Rollback() // a file has no sessions to end
			}
			if err := s.Drop(ctx); err != nil {
				t.Fatalf("Drop: %v", err)
			}
			if exists(t, srv, s.Name()) {
				t.Errorf("%s is still there after Drop", s.Name())
			}
			if err := s.Drop(ctx); err != nil {
				t.Errorf("a second Drop: %v", err)
			}
		})
	}
}

func TestOpenBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	existing := filepath.Join(dir, "there.db")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ url, want string }{
		{"redis://127.0.0.1:6379", `store scheme "redis" is not supported; accepted: postgres://`},
		{"trial.db", `has no scheme`},
		{"postgres:///nohost", `names no host`},
		{"mysql://root:s3cret@/x", `names no host`},
		{"sqlite:" + existing, "exists; give a path that does not exist yet, or a directory"},
	} {
		_, err := store.Open(context.Background(), tc.url)
		if err == nil || !errors.Is(err, store.ErrInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) = %v, want ErrInput with %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q): the password shows: %v", tc.url, err)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("an existing SQLite file was touched: %q", b)
	}
}

// A server that does not answer: the error is not the user's input, and
// the password never shows.
func TestOpenUnreachableHidesPassword(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"postgres://u:s3cret@127.0.0.1:1/db?connect_timeout=2", "mysql://u:s3cret@127.0.0.1:1/?timeout=2s"} {
		_, err := store.Open(context.Background(), u)
		if err == nil || strings.Contains(err.Error(), "s3cret") || errors.Is(err, store.ErrInput) {
			t.Errorf("Open(%s) = %v, want a connection error without the password", u, err)
		}
		// pgx tries with TLS and without (sslmode=prefer): one refusal said once.
		if err != nil && strings.Count(err.Error(), "connection refused") != 1 {
			t.Errorf("Open(%s) = %v, want the refusal said once", u, err)
		}
	}
}

func TestApplySchemaErrorLine(t *testing.T) {
	t.Parallel()
	schema := "-- accounts\nCREATE TABLE a (id INTEGER PRIMARY KEY);\n\n/* ; */ INSERT INTO a VALUES (1);\nINSERT INTO a\n  VALUES (1);\n"
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			s := open(t, srv)
			err := s.ApplySchema(context.Background(), schema)
			var se *store.SchemaError
			if !errors.As(err, &se) || !errors.Is(err, store.ErrInput) {
				t.Fatalf("ApplySchema = %v, want a *SchemaError wrapping ErrInput", err)
			}
			// The duplicate key is reported where its statement starts.
			if se.Line != 5 || !strings.HasPrefix(err.Error(), "line 5: ") {
				t.Errorf("error %q at line %d, want line 5", err, se.Line)
			}
			// A syntax error: PostgreSQL and MariaDB say where inside the
			// statement, SQLite only which statement.
			err = s.ApplySchema(context.Background(), "CREATE TABLE b (id INTEGER);\nSELECT 1\nFROM b\nWHERE WHERE;\n")
			want := map[string]int{"postgres": 4, "mysql": 4, "sqlite": 2}[srv.name]
			if !errors.As(err, &se) || se.Line != want {
				t.Errorf("syntax error: %v, want line %d", err, want)
			}
		})
	}
}

// Routine bodies with semicolons inside are one statement each, and work.
func TestApplySchemaRoutines(t *testing.T) {
	t.Parallel()
	trigger := map[string]string{
		"postgres": `CREATE FUNCTION bump() RETURNS trigger AS $body$
BEGIN
  UPDATE n SET c = c + 1; -- ; in a comment
  RETURN NEW;
END;
$body$ LANGUAGE plpgsql;
CREATE TRIGGER t AFTER INSERT ON w FOR EACH ROW EXECUTE FUNCTION bump();`,
		"mysql": `CREATE TRIGGER t AFTER INSERT ON w FOR EACH ROW
BEGIN
  IF NEW.v > 0 THEN
    UPDATE n SET c = c + CASE WHEN NEW.v > 1 THEN 1 ELSE 1 END;
  END IF;
END;`,
		"sqlite": `CREATE TRIGGER t AFTER INSERT ON w FOR EACH ROW
BEGIN
  UPDATE n SET c = c + CASE WHEN NEW.v > 1 THEN 1 ELSE 1 END;
  SELECT 'it''s; fine';
END;`,
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			s := open(t, srv)
			schema := "CREATE TABLE n (c INTEGER);\nINSERT INTO n VALUES (0);\nCREATE TABLE w (v INTEGER);\n" + trigger[srv.name] + "\nINSERT INTO w VALUES (1);\nINSERT INTO w VALUES (2);\n"
			if err := s.ApplySchema(context.Background(), schema); err != nil {
				t.Fatalf("ApplySchema: %v", err)
			}
			v, err := s.Judge(context.Background(), "", "SELECT c FROM n WHERE c <> 0")
			if err != nil || len(v) != 1 || !reflect.DeepEqual(v[0].Rows, [][]string{{"2"}}) {
				t.Errorf("the trigger ran %v times (err %v), want 2", v, err)
			}
		})
	}
}

// TestSQLiteLeavesOthersFiles: a -wal, -shm or -journal file already beside
// the path is not the scratch database's: Open refuses the path (SQLite
// would replay it into the new file) and it is still there, as it was
// (Drop removed it).
func TestSQLiteLeavesOthersFiles(t *testing.T) {
	t.Parallel()
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		path := filepath.Join(t.TempDir(), "x.db")
		if err := os.WriteFile(path+suffix, []byte("someone else's"), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := store.Open(context.Background(), "sqlite:"+path)
		if err == nil {
			_ = s.Drop(context.Background())
		}
		if !errors.Is(err, store.ErrInput) || !strings.Contains(err.Error(), path+suffix+" exists") {
			t.Errorf("%s: Open = %v, want ErrInput naming %s", suffix, err, path+suffix)
		}
		if b, err := os.ReadFile(path + suffix); err != nil || string(b) != "someone else's" {
			t.Errorf("%s: after Open and Drop: %q, %v", suffix, b, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %s was created: %v", suffix, path, err)
		}
	}
}
