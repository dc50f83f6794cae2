package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// openPostgres creates the scratch database through the database rawURL
// names and connects to it.
func openPostgres(ctx context.Context, rawURL string) (*Scratch, error) {
	u, pw, err := parseServerURL(rawURL)
	if err != nil {
		return nil, err
	}
	admin, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, scrubErr(inputErrorf("store %s: %v", redact(rawURL), err), pw)
	}
	name := newName()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		_ = admin.Close()
		return nil, scrubErr(fmt.Errorf("postgres %s: create database: %w", redact(rawURL), err), pw)
	}
	scratch := *u
	scratch.Path = "/" + name
	scratch.RawPath = ""
	s := &Scratch{kind: postgres, url: scratch.String(), name: name, password: pw}
	s.drop = func(ctx context.Context) error {
		defer admin.Close()
		return dropPostgres(ctx, admin, name)
	}
	if s.db, err = sql.Open("pgx", s.url); err == nil {
		err = s.db.PingContext(ctx)
	}
	if err == nil {
		err = s.createPgJudge(ctx, admin, scratch)
	}
	if err != nil {
		err = s.scrub(fmt.Errorf("postgres %s: connect to %s: %w", redact(rawURL), name, err))
		return nil, errors.Join(err, s.Drop(ctx))
	}
	return s, nil
}

// dropPostgres ends the sessions still in database name and drops it.
func dropPostgres(ctx context.Context, admin *sql.DB, name string) error {
	// Workers killed mid-query may leave sessions behind for a moment;
	// DROP DATABASE refuses while any is connected. Best effort: a
	// session we may not end makes the DROP say so.
	_, _ = admin.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name)
	_, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
	if err != nil {
		return err
	}
	// Its judge's role (judgerole.go), once the database's grants are gone.
	_, err = admin.ExecContext(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{name + judgeSuffix}.Sanitize())
	return err
}

// pgOneStatement, as a query's first argument, makes pgx send it with the
// extended protocol, in which PostgreSQL takes one statement only, even when
// the --store URL asks for default_query_exec_mode=simple_protocol: a
// judge's query cannot COMMIT its read-only transaction and write after.
const pgOneStatement = pgx.QueryExecModeDescribeExec

// pgErrorOffset returns the 1-based character position PostgreSQL gave
// for err within the statement, or 0.
func pgErrorOffset(err error) int {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return int(pe.Position)
	}
	return 0
}

// isPgServerError reports whether PostgreSQL itself refused the statement
// (syntax, unknown table, constraint), as opposed to a connection problem.
func isPgServerError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}
