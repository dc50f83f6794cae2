package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"

	"github.com/go-sql-driver/mysql"
)

// openMySQL creates the scratch database on the MySQL or MariaDB server
// rawURL names and connects to it.
func openMySQL(ctx context.Context, rawURL string) (*Scratch, error) {
	u, cfg, admin, err := mysqlAdmin(rawURL)
	if err != nil {
		return nil, err
	}
	pw := cfg.Passwd
	name := newName()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		_ = admin.Close()
		return nil, scrubErr(fmt.Errorf("mysql %s: create database: %w", redact(rawURL), err), pw)
	}
	scratch := *u
	scratch.Path = "/" + name
	scratch.RawPath = ""
	s := &Scratch{kind: mysqlKind, url: scratch.String(), name: name, password: pw}
	s.drop = func(ctx context.Context) error {
		defer admin.Close()
		return dropMySQL(ctx, admin, name)
	}
	scfg := cfg.Clone()
	scfg.DBName = name // multiStatements stays off (mysqlConfig)
	if s.db, err = connectMySQL(scfg); err == nil {
		err = s.db.PingContext(ctx)
	}
	if err == nil {
		err = s.createMySQLJudge(ctx, admin, cfg)
	}
	if err != nil {
		err = s.scrub(fmt.Errorf("mysql %s: connect to %s: %w", redact(rawURL), name, err))
		return nil, errors.Join(err, s.Drop(ctx))
	}
	return s, nil
}

// mysqlConfig parses a mysql:// or mariadb:// URL into the driver's
// config (no database chosen) and returns the URL and its password too;
// errors wrap ErrInput.
func mysqlConfig(rawURL string) (*url.URL, *mysql.Config, string, error) {
	u, pw, err := parseServerURL(rawURL)
	if err != nil {
		return nil, nil, "", err
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	// The driver parses its own DSN options (tls, timeout, ...) from the
	// URL's query; user and password are set apart so no character in them
	// can confuse its DSN syntax.
	cfg, err := mysql.ParseDSN("tcp(" + addr + ")/?" + u.RawQuery)
	if err != nil {
		return nil, nil, "", inputErrorf("store %s: %v", redact(rawURL), err)
	}
	cfg.User = u.User.Username()
	cfg.Passwd = pw
	// lockctl sends one statement at a time (the schema split, the
	// queries): with the URL's multiStatements=true, a query could carry a
	// DDL after its SELECT, which MySQL commits and runs.
	cfg.MultiStatements = false
	return u, cfg, pw, nil
}

// mysqlAdmin parses rawURL and connects to its server without a database:
// the URL, the driver's config (password in it) and the connection, or an
// error wrapping ErrInput (password removed).
func mysqlAdmin(rawURL string) (*url.URL, *mysql.Config, *sql.DB, error) {
	u, cfg, pw, err := mysqlConfig(rawURL)
	if err != nil {
		return nil, nil, nil, err
	}
	admin, err := connectMySQL(cfg)
	if err != nil {
		return nil, nil, nil, scrubErr(inputErrorf("store %s: %v", redact(rawURL), err), pw)
	}
	return u, cfg, admin, nil
}

// dropMySQL ends the sessions still in database name and drops it, and its
// judge's user (judgerole.go).
func dropMySQL(ctx context.Context, admin *sql.DB, name string) error {
	// DROP DATABASE waits on the metadata locks of open transactions:
	// end the sessions still using the database first (best effort).
	killMySQLSessions(ctx, admin, name)
	if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
		return err
	}
	_, err := admin.ExecContext(ctx, "DROP USER IF EXISTS '"+name+judgeSuffix+"'@'%'")
	return err
}

func connectMySQL(cfg *mysql.Config) (*sql.DB, error) {
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// killMySQLSessions ends every other session whose current database is
// name, as far as the listing shows them and the account may end them.
func killMySQLSessions(ctx context.Context, admin *sql.DB, name string) {
	rows, err := admin.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE db = ? AND id <> CONNECTION_ID()", name)
	if err != nil {
		return
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if rows.Scan(&id) == nil {
			ids = append(ids, id)
		}
	}
	_ = rows.Close()
	for _, id := range ids {
		// The session may have ended since the listing: not an error.
		_, _ = admin.ExecContext(ctx, "KILL "+strconv.FormatInt(id, 10))
	}
}

// mysqlLineRE finds the statement line in a MySQL syntax error ("... near
// 'x' at line 3").
var mysqlLineRE = regexp.MustCompile(`at line (\d+)$`)

// mysqlErrorLine returns the 1-based line within the statement that a MySQL
// error names, or 0.
func mysqlErrorLine(err error) int {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return 0
	}
	m := mysqlLineRE.FindStringSubmatch(me.Message)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// isMySQLServerError reports whether the server itself refused the
// statement, as opposed to a connection problem.
func isMySQLServerError(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me)
}
