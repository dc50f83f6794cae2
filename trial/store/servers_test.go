package store_test

import (
	"context"
	"database/sql"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/lockctl/lockctl/trial/store"
)

// server is one of the three database families the tests run against.
type server struct {
	name string
	url  func(t *testing.T) string // the --store URL; skips when unreachable
}

// servers are PostgreSQL and MariaDB on this machine (URLs overridable with
// LOCKCTL_TEST_POSTGRES_URL and LOCKCTL_TEST_MYSQL_URL) and SQLite in a
// temporary directory. A server that does not answer fails its tests with
// one line naming it: a skip would hide a broken CI.
var servers = []server{
	{"postgres", func(t *testing.T) string {
		return reachable(t, "LOCKCTL_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	}},
	{"mysql", func(t *testing.T) string {
		return reachable(t, "LOCKCTL_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/")
	}},
	{"sqlite", func(t *testing.T) string { return "sqlite:" + t.TempDir() }},
}

func reachable(t *testing.T, env, def string) string {
	t.Helper()
	raw := os.Getenv(env)
	if raw == "" {
		raw = def
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		t.Fatalf("%s is not reachable: %v; these tests need it (README.md, \"Run the tests\"; .ci/run starts it), or name another server in %s", u.Host, err, env)
	}
	_ = c.Close()
	return raw
}

// open creates a scratch database on srv, dropped when t ends.
func open(t *testing.T, srv server) *store.Scratch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.Open(ctx, srv.url(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Drop(context.Background()); err != nil {
			t.Errorf("Drop: %v", err)
		}
	})
	return s
}

// workerDB connects to the scratch database the way a worker would: from
// URL() alone. For MySQL it converts the URL to go-sql-driver's DSN form, as
// examples/README.md shows.
func workerDB(t *testing.T, srv server, s *store.Scratch) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	switch srv.name {
	case "postgres":
		db, err = sql.Open("pgx", s.URL())
	case "mysql":
		u, perr := url.Parse(s.URL())
		if perr != nil {
			t.Fatal(perr)
		}
		cfg := mysql.NewConfig()
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, strings.TrimPrefix(u.Path, "/")
		db, err = sql.Open("mysql", cfg.FormatDSN())
	case "sqlite":
		db, err = sql.Open("sqlite", strings.TrimPrefix(s.URL(), "sqlite:")+"?_pragma=busy_timeout(5000)")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// exists reports whether the scratch database is still on its server.
func exists(t *testing.T, srv server, name string) bool {
	t.Helper()
	switch srv.name {
	case "sqlite":
		_, err := os.Stat(name)
		return err == nil
	case "postgres":
		return count(t, "pgx", srv.url(t), "SELECT count(*) FROM pg_database WHERE datname = $1", name) > 0
	}
	u, _ := url.Parse(srv.url(t))
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net, cfg.Addr = "tcp", u.Host
	return count(t, "mysql", cfg.FormatDSN(), "SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?", name) > 0
}

func count(t *testing.T, driver, dsn, q string, args ...any) int {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}
