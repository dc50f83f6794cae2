package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The judge's queries run as a role of their own that may only read the
// scratch database: a read-only transaction does not stop a function that
// reaches outside it (dblink_exec committed a DELETE, pg_terminate_backend
// ended another database's session). The role is the database's name plus
// judgeSuffix, logs in with a random password, and is dropped with it.
const judgeSuffix = "_judge"

// JudgeNote says when the judge's queries could not run as a read-only
// role of their own (the --store user may not create one) and ran as that
// user, in the read-only transaction alone; "" when they do.
func (s *Scratch) JudgeNote() string { return s.judgeNote }

// judgePassword returns 32 random hex digits.
func judgePassword() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// judgeURL is scratch with the judge's role and password as its user
// (user= and password= options removed: they would win over them).
func judgeURL(scratch url.URL, role, pw string) string {
	scratch.User = url.UserPassword(role, pw)
	q := scratch.Query()
	q.Del("user")
	q.Del("password")
	scratch.RawQuery = q.Encode()
	return scratch.String()
}

// createPgJudge creates the judge's login role on PostgreSQL (NOSUPERUSER,
// no other role's member: so no pg_signal_backend, no pg_read_server_files,
// and dblink refuses it a connection without a password) with CONNECT on
// the scratch database, and connects as it.
func (s *Scratch) createPgJudge(ctx context.Context, admin *sql.DB, scratch url.URL) error {
	role, pw := s.name+judgeSuffix, judgePassword()
	s.judgeRole = role
	id := pgx.Identifier{role}.Sanitize()
	if _, err := admin.ExecContext(ctx, "CREATE ROLE "+id+" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION PASSWORD '"+pw+"'"); err != nil {
		s.judgeRole = ""
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" { // insufficient_privilege: no CREATEROLE
			s.judgeNote = "the judge's queries ran as the --store user, in a read-only transaction only: it may not create a read-only role (CREATEROLE)"
			return nil
		}
		return fmt.Errorf("create the judge's read-only role %s: %w", role, err)
	}
	if _, err := admin.ExecContext(ctx, "GRANT CONNECT ON DATABASE "+s.name+" TO "+id); err != nil {
		return fmt.Errorf("grant the judge's role %s CONNECT: %w", role, err)
	}
	db, err := sql.Open("pgx", judgeURL(scratch, role, pw))
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		return fmt.Errorf("connect as the judge's read-only role %s (the server must let it log in with a password): %w", role, scrubErr(err, pw))
	}
	s.judgeDB = db
	return nil
}

// pgJudgeGrants gives the judge's role SELECT on every table and sequence
// of the scratch database's own schemas, as they are now (the workers may
// have made more), and takes EXECUTE on SECURITY DEFINER functions from
// PUBLIC: such a function would run with its owner's rights.
func (s *Scratch) pgJudgeGrants(ctx context.Context) error {
	id := pgx.Identifier{s.judgeRole}.Sanitize()
	rows, err := s.db.QueryContext(ctx, `SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'`)
	if err != nil {
		return err
	}
	var stmts []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			_ = rows.Close()
			return err
		}
		ns := pgx.Identifier{n}.Sanitize()
		stmts = append(stmts, "GRANT USAGE ON SCHEMA "+ns+" TO "+id, "GRANT SELECT ON ALL TABLES IN SCHEMA "+ns+" TO "+id, "GRANT SELECT ON ALL SEQUENCES IN SCHEMA "+ns+" TO "+id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	rows, err = s.db.QueryContext(ctx, `SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE p.prosecdef AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			_ = rows.Close()
			return err
		}
		stmts = append(stmts, "REVOKE EXECUTE ON FUNCTION "+f+" FROM PUBLIC")
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for _, st := range stmts {
		if _, err := s.db.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	return nil
}

// createMySQLJudge creates the judge's user on MySQL or MariaDB, with
// SELECT on the scratch database only (no EXECUTE, FILE, PROCESS or
// CONNECTION ADMIN: no routine, no INTO OUTFILE, no KILL of another's
// session), and connects as it.
func (s *Scratch) createMySQLJudge(ctx context.Context, admin *sql.DB, cfg *mysql.Config) error {
	role, pw := s.name+judgeSuffix, judgePassword()
	s.judgeRole = role
	if _, err := admin.ExecContext(ctx, "CREATE USER '"+role+"'@'%' IDENTIFIED BY '"+pw+"'"); err != nil {
		s.judgeRole = ""
		var me *mysql.MySQLError
		if errors.As(err, &me) && (me.Number == 1227 || me.Number == 1044) { // access denied: no CREATE USER
			s.judgeNote = "the judge's queries ran as the --store user, in a read-only transaction only: it may not create a read-only user (CREATE USER)"
			return nil
		}
		return fmt.Errorf("create the judge's read-only user %s: %w", role, err)
	}
	if _, err := admin.ExecContext(ctx, "GRANT SELECT ON "+s.name+".* TO '"+role+"'@'%'"); err != nil {
		return fmt.Errorf("grant the judge's user %s SELECT: %w", role, err)
	}
	jcfg := cfg.Clone()
	jcfg.User, jcfg.Passwd, jcfg.DBName, jcfg.MultiStatements = role, pw, s.name, false
	db, err := connectMySQL(jcfg)
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		return fmt.Errorf("connect as the judge's read-only user %s: %w", role, scrubErr(err, pw))
	}
	s.judgeDB = db
	return nil
}
