package store_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lockctl/lockctl/trial/store"
)

// TestJudgeOnlyReads: the judge's queries run as a role that may only read
// the scratch database, so what a read-only transaction cannot stop is
// refused too: a session of another database ended (pg_terminate_backend,
// pg_cancel_backend), a write committed through dblink in a session of its
// own, a file read or written on the server (pg_read_file, SELECT ... INTO
// OUTFILE), another database read (mysql.user), a role switch back
// (set_config('role')). Each of these ran as the --store URL's superuser.
// The role is gone after Drop.
func TestJudgeOnlyReads(t *testing.T) {
	t.Parallel()
	for _, srv := range servers[:2] {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, err := store.Open(ctx, srv.url(t))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Drop(ctx) }()
			if err := s.ApplySchema(ctx, judgeSchema); err != nil {
				t.Fatal(err)
			}
			driver, dsn := "pgx", srv.url(t)
			if srv.name == "mysql" {
				driver, dsn = "mysql", "root@tcp(127.0.0.1:3306)/"
			}
			victim, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer victim.Close()
			victim.SetMaxOpenConns(1)
			var pid int64
			var who string
			var refused []string
			if srv.name == "postgres" {
				if err := victim.QueryRow("SELECT pg_backend_pid()").Scan(&pid); err != nil {
					t.Fatal(err)
				}
				p := strconv.FormatInt(pid, 10)
				refused = []string{
					"SELECT pg_terminate_backend(" + p + ")",
					"SELECT pg_cancel_backend(" + p + ")",
					"SELECT pg_read_file('/etc/hostname')",
					"SELECT set_config('role', 'postgres', false)",
					"SELECT lo_import('/etc/hostname')",
				}
				if _, err := victim.Exec("CREATE EXTENSION IF NOT EXISTS dblink"); err == nil {
					db := workerDB(t, srv, s)
					if _, err := db.Exec("CREATE EXTENSION dblink"); err != nil {
						t.Fatal(err)
					}
					refused = append(refused, "SELECT dblink_exec('host=127.0.0.1 user=postgres dbname=' || current_database(), 'DELETE FROM writes')")
				} else {
					t.Logf("no dblink on this server: %v", err)
				}
				who = "SELECT 1 WHERE current_user <> '" + filepath.Base(s.Name()) + "_judge'"
			} else {
				out := filepath.Join(t.TempDir(), "outfile")
				refused = []string{
					"SELECT fence FROM writes INTO OUTFILE '" + out + "'",
					"SELECT user FROM mysql.user",
				}
				who = "SELECT 1 WHERE current_user() NOT LIKE '" + s.Name() + "\\_judge@%'"
				defer func() {
					if _, err := os.Stat(out); err == nil {
						t.Errorf("the judge wrote %s", out)
					}
				}()
			}
			for _, q := range refused {
				vs, err := s.Judge(ctx, "", q)
				if !errors.Is(err, store.ErrInput) {
					t.Errorf("Judge(%q) = %v, %v; want it refused (ErrInput)", q, vs, err)
				}
			}
			if vs, err := s.Judge(ctx, "", who); err != nil || len(vs) != 0 {
				t.Errorf("the judge's user: %v, %v", vs, err)
			}
			if err := victim.Ping(); err != nil {
				t.Errorf("the other session: %v", err)
			}
			if vs, err := s.Judge(ctx, "", "SELECT n FROM (SELECT count(*) AS n FROM writes) c WHERE n <> 5"); err != nil || len(vs) != 0 {
				t.Errorf("the writes after judging: %v, %v; want the 5 rows", vs, err)
			}
			role := filepath.Base(s.Name()) + "_judge"
			if err := s.Drop(ctx); err != nil {
				t.Fatal(err)
			}
			q := "SELECT count(*) FROM pg_roles WHERE rolname = '" + role + "'"
			if srv.name == "mysql" {
				q = "SELECT count(*) FROM mysql.user WHERE user = '" + role + "'"
			}
			var n int
			if err := victim.QueryRow(q).Scan(&n); err != nil || n != 0 {
				t.Errorf("the judge's role %s after Drop: %d, %v", role, n, err)
			}
		})
	}
}
