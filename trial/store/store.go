// Package store gives `lockctl trial` a scratch database on the user's own
// server: it creates one (PostgreSQL, MySQL/MariaDB or a fresh SQLite file),
// runs the user's schema in it, judges what the workers committed there and
// drops it at the end. It never changes a database it did not create: a
// Boundary (`lockctl diagnose`) only reads the user's own, rolled back.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/owner"
	"github.com/lockctl/lockctl/trial/storeapi"
)

// ErrInput marks errors caused by what the user gave: storeapi.ErrInput.
var ErrInput = storeapi.ErrInput

// inputError is an error of the user's input: its message as it is, and
// errors.Is(err, ErrInput).
type inputError struct{ err error }

func (e *inputError) Error() string   { return e.err.Error() }
func (e *inputError) Unwrap() []error { return []error{ErrInput, e.err} }
func inputErrorf(format string, args ...any) error {
	return &inputError{fmt.Errorf(format, args...)}
}

// NamePrefix starts the name of every scratch database (and SQLite file).
const NamePrefix = storeapi.NamePrefix

// init registers this package with storeapi: lockctl-store and the tests
// link it, lockctl does not (storeapi's package comment says why). The
// funcs return a nil interface, not a typed nil, with an error.
func init() {
	storeapi.Register(storeapi.Driver{
		Open: func(ctx context.Context, rawURL string) (storeapi.Scratch, error) {
			s, err := Open(ctx, rawURL)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		OpenBoundary: func(ctx context.Context, rawURL string) (storeapi.Boundary, error) {
			b, err := OpenBoundary(ctx, rawURL)
			if err != nil {
				return nil, err
			}
			return b, nil
		},
		DropOrphans: DropOrphans,
	})
}

// dropTimeout bounds Drop when its context is already done (Ctrl-C): the
// scratch database must still go.
const dropTimeout = 10 * time.Second

// Scratch is one scratch database, open until Drop.
type Scratch struct {
	kind kind
	url  string  // what workers get as DATABASE_URL
	name string  // database name, or the SQLite file's absolute path
	db   *sql.DB // connected to the scratch database
	// judgeDB is connected as judgeRole, which may only read the scratch
	// database (PostgreSQL, MySQL); the judge's queries run there.
	judgeDB   *sql.DB
	judgeRole string
	judgeNote string // why there is no judgeRole (JudgeNote)
	drop      func(ctx context.Context) error
	password  string // scrubbed from every error
	dropped   bool
}

// kind is a family of servers: one SQL dialect, one driver.
type kind int

const (
	postgres kind = iota
	mysqlKind
	sqliteKind
)

// Schemes lists the accepted --store forms, for error messages and help.
const Schemes = "postgres://USER@HOST:PORT/DB, mysql://USER@HOST:PORT/ (MariaDB too) or sqlite:PATH"

// Open creates a scratch database on the server rawURL names and connects
// to it:
//   - postgres:// or postgresql:// (pgx): CREATE DATABASE lockctl_trial_<hex>
//     through the database the URL names;
//   - mysql:// or mariadb:// (go-sql-driver/mysql): CREATE DATABASE
//     lockctl_trial_<hex>; the URL's database part is ignored;
//   - sqlite:PATH (modernc.org/sqlite, no cgo): PATH is a file that must not
//     exist yet, or a directory in which lockctl_trial_<hex>.db is created;
//     the file is put in WAL mode so several workers can write.
//
// It returns an error wrapping ErrInput for an unsupported scheme (naming it
// and the accepted ones) or an existing SQLite file, and the driver's error
// (password removed) when the server cannot be reached or refuses.
func Open(ctx context.Context, rawURL string) (*Scratch, error) {
	scheme, _, ok := strings.Cut(rawURL, ":")
	if !ok {
		return nil, inputErrorf("store %q has no scheme; accepted: %s", redact(rawURL), Schemes)
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		return openPostgres(ctx, rawURL)
	case "mysql", "mariadb":
		return openMySQL(ctx, rawURL)
	case "sqlite":
		return openSQLite(ctx, rawURL)
	}
	return nil, inputErrorf("store scheme %q is not supported; accepted: %s", scheme, Schemes)
}

// URL returns the DATABASE_URL handed to the workers, password included (so
// never print it). Its form by family:
//   - postgres://USER:PASS@HOST:PORT/lockctl_trial_<hex>?<the given query>
//     (libpq, pgx, psycopg, node-postgres and psql take it as it is);
//   - mysql://USER:PASS@HOST:PORT/lockctl_trial_<hex>?<the given query>, in
//     the given scheme (mysql or mariadb): the URL form Node's mysql2,
//     SQLAlchemy and PyMySQL-style parsers take; go-sql-driver/mysql wants
//     its DSN form USER:PASS@tcp(HOST:PORT)/DB instead (examples/README.md shows
//     the conversion);
//   - sqlite:/ABSOLUTE/PATH: the file to open (strip "sqlite:").
func (s *Scratch) URL() string { return s.url }

// Name returns the scratch database's name, or the SQLite file's absolute
// path: what --keep prints.
func (s *Scratch) Name() string { return s.name }

// Drop closes the scratch connections and removes the database (PostgreSQL
// and MySQL: disconnecting every session still in it first, then DROP
// DATABASE; SQLite: the file and the -wal, -shm and -journal files SQLite
// made beside it). It runs even when ctx is already done (Ctrl-C), bounded
// by 10 s. A second call does nothing.
func (s *Scratch) Drop(ctx context.Context) error {
	if s.dropped {
		return nil
	}
	s.dropped = true
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dropTimeout)
	defer cancel()
	if s.judgeDB != nil {
		_ = s.judgeDB.Close()
	}
	if s.db != nil {
		_ = s.db.Close()
	}
	if err := s.drop(dctx); err != nil {
		return s.scrub(fmt.Errorf("drop %s: %w", s.name, err))
	}
	return nil
}

// newName returns lockctl_trial_<owner>_<6 random hex digits>, owner this
// lockctl's PID_START_BOOT (internal/owner), so that DropOrphans can tell
// when it is gone: digits, hex and _ only, so it needs no quoting on any of
// the three servers, and at most 63 bytes (PostgreSQL's limit).
func newName() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return NamePrefix + owner.Self().String() + "_" + hex.EncodeToString(b)
}

// scrub removes the URL's password from err's message, keeping err for
// errors.Is and errors.As.
func (s *Scratch) scrub(err error) error { return scrubErr(err, s.password) }

// scrubErr also puts the message on one line (pgx lists one dial error per
// address on lines of their own), each line once: with sslmode=prefer pgx
// tries every address twice, with TLS and without, and says so twice.
func scrubErr(err error, password string) error {
	if err == nil {
		return nil
	}
	var lines []string
	seen := map[string]bool{}
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" && !seen[l] {
			seen[l] = true
			lines = append(lines, l)
		}
	}
	msg := strings.Join(lines, " ")
	if password != "" {
		msg = strings.ReplaceAll(msg, password, "xxxxx")
	}
	if msg == err.Error() {
		return err
	}
	return &scrubbed{msg: msg, err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// redact returns rawURL with its password replaced by xxxxx (or as it is
// when it does not parse as a URL).
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// parseServerURL parses a postgres:// or mysql:// URL, wrapping ErrInput
// (with the password redacted) when it does not parse or names no host.
func parseServerURL(rawURL string) (*url.URL, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, "", inputErrorf("store URL does not parse: %v", err)
	}
	if u.Host == "" {
		return nil, "", inputErrorf("store %q names no host; accepted: %s", redact(rawURL), Schemes)
	}
	pw, _ := u.User.Password()
	return u, pw, nil
}
