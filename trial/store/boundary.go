package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Boundary is a connection to the user's own database, the write boundary
// of `lockctl diagnose`: it only ever runs one read-only query, in a
// transaction that is rolled back, and never creates or drops anything.
type Boundary struct {
	s *Scratch
}

// maxFenceRows bounds the rows a fence query may return that are read.
const maxFenceRows = 1000

// OpenBoundary connects to the database rawURL names, in the forms --store
// takes (Schemes): postgres:// or postgresql:// and mysql:// or mariadb://
// with the database in the URL's path, sqlite:PATH of an existing file
// (opened read-only). It returns an error wrapping ErrInput for an
// unsupported scheme (naming it and the accepted ones), a URL without a host
// or a SQLite file that does not exist, and the driver's error (password
// removed) when the server cannot be reached or refuses.
func OpenBoundary(ctx context.Context, rawURL string) (*Boundary, error) {
	scheme, _, ok := strings.Cut(rawURL, ":")
	if !ok {
		return nil, inputErrorf("store %q has no scheme; accepted: %s", redact(rawURL), Schemes)
	}
	var s *Scratch
	var err error
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		s, err = boundaryPostgres(rawURL)
	case "mysql", "mariadb":
		s, err = boundaryMySQL(rawURL)
	case "sqlite":
		s, err = boundarySQLite(rawURL)
	default:
		return nil, inputErrorf("store scheme %q is not supported; accepted: %s", scheme, Schemes)
	}
	if err != nil {
		return nil, err
	}
	if err := s.db.PingContext(ctx); err != nil {
		_ = s.db.Close()
		return nil, s.scrub(fmt.Errorf("store %s: %w", redact(rawURL), err))
	}
	return &Boundary{s: s}, nil
}

func boundaryPostgres(rawURL string) (*Scratch, error) {
	u, pw, err := parseServerURL(rawURL)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, scrubErr(inputErrorf("store %s: %v", redact(rawURL), err), pw)
	}
	return &Scratch{kind: postgres, db: db, name: strings.TrimPrefix(u.Path, "/"), password: pw}, nil
}

func boundaryMySQL(rawURL string) (*Scratch, error) {
	u, cfg, pw, err := mysqlConfig(rawURL)
	if err != nil {
		return nil, err
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	db, err := connectMySQL(cfg)
	if err != nil {
		return nil, scrubErr(inputErrorf("store %s: %v", redact(rawURL), err), pw)
	}
	return &Scratch{kind: mysqlKind, db: db, name: cfg.DBName, password: pw}, nil
}

// boundarySQLite opens an existing file read-only (mode=ro: a path that
// does not exist is not created).
func boundarySQLite(rawURL string) (*Scratch, error) {
	p := strings.TrimPrefix(rawURL[len("sqlite:"):], "//")
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, inputErrorf("store %s: %v", rawURL, err)
	}
	switch fi, err := os.Stat(abs); {
	case errors.Is(err, os.ErrNotExist):
		return nil, inputErrorf("store %s: %s does not exist; give the database file the workers write", rawURL, abs)
	case err != nil:
		return nil, inputErrorf("store %s: %v", rawURL, err)
	case fi.IsDir():
		return nil, inputErrorf("store %s: %s is a directory; give the database file the workers write", rawURL, abs)
	}
	db, err := sql.Open("sqlite", "file:"+abs+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, inputErrorf("store %s: %v", rawURL, err)
	}
	return &Scratch{kind: sqliteKind, db: db, name: abs}, nil
}

// NewestFence runs the fence query q, one SELECT (or WITH, VALUES, TABLE)
// returning one integer column, in a read-only transaction that is rolled
// back, and returns the highest value it returned: the newest fence the
// store has accepted. It returns nil when the query returns no rows or only
// NULLs (the store has accepted no fence yet). Errors wrap ErrInput when q
// is not one reading statement, the server refuses it, it returns other
// than one column, or a value is not an integer; otherwise they are the
// driver's (the connection failed).
func (b *Boundary) NewestFence(ctx context.Context, q string) (*int64, error) {
	var newest *int64
	err := b.s.readOnly(ctx, func(tx querier) error {
		cols, rows, _, err := b.s.query(ctx, tx, "fence", q, maxFenceRows)
		if err != nil {
			return err
		}
		if len(cols) != 1 {
			return inputErrorf("the fence query returns %d columns (%s); give one: the newest fence the store accepted", len(cols), strings.Join(cols, ", "))
		}
		for i, r := range rows {
			if r[0] == nil {
				continue
			}
			n, err := toInt64(r[0])
			if err != nil {
				return inputErrorf("the fence query's row %d: %q is not an integer fence", i+1, textValue(r[0]))
			}
			if newest == nil || n > *newest {
				newest = &n
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return newest, nil
}

// Close closes the connection.
func (b *Boundary) Close() error { return b.s.db.Close() }
