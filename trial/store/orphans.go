package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/internal/owner"

	"github.com/lockctl/lockctl/trial/storeapi"
)

// Dropped is storeapi.Dropped.
type Dropped = storeapi.Dropped

// orphanOwner returns the owner of a scratch database named name when that
// lockctl is provably gone (internal/owner), and why; false for a name
// lockctl did not make with an owner in it (older lockctl, or not ours) or
// whose lockctl still runs.
func orphanOwner(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, NamePrefix)
	i := strings.LastIndexByte(rest, '_')
	if !ok || i < 0 {
		return "", false
	}
	id, ok := owner.Parse(rest[:i])
	if !ok {
		return "", false
	}
	gone, why := id.Gone()
	return why, gone
}

// DropOrphans drops the scratch databases on rawURL's server (a --store
// URL) that a lockctl now provably gone created and left (it was killed):
// PostgreSQL and MySQL databases named lockctl_trial_<owner>_<hex>, and
// for sqlite:DIR such files in DIR. It never touches another name, nor a
// database whose lockctl still runs. It returns what it dropped, and an
// error (password removed; wrapping ErrInput for a bad URL) when the
// server cannot be listed; a database that cannot be dropped is an error
// too, after the others were.
func DropOrphans(ctx context.Context, rawURL string) ([]Dropped, error) {
	scheme, _, ok := strings.Cut(rawURL, ":")
	if !ok {
		return nil, inputErrorf("store %q has no scheme; accepted: %s", redact(rawURL), Schemes)
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		_, pw, err := parseServerURL(rawURL)
		if err != nil {
			return nil, err
		}
		admin, err := sql.Open("pgx", rawURL)
		if err != nil {
			return nil, scrubErr(inputErrorf("store %s: %v", redact(rawURL), err), pw)
		}
		defer admin.Close()
		out, err := dropListed(ctx, admin, `SELECT datname FROM pg_database WHERE datname LIKE 'lockctl\_trial\_%'`, dropPostgres)
		return out, scrubErr(err, pw)
	case "mysql", "mariadb":
		_, cfg, admin, err := mysqlAdmin(rawURL)
		if err != nil {
			return nil, err
		}
		defer admin.Close()
		out, err := dropListed(ctx, admin, `SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'lockctl\_trial\_%'`, dropMySQL)
		return out, scrubErr(err, cfg.Passwd)
	case "sqlite":
		return dropSQLiteOrphans(strings.TrimPrefix(rawURL[len("sqlite:"):], "//"))
	}
	return nil, inputErrorf("store scheme %q is not supported; accepted: %s", scheme, Schemes)
}

// dropListed drops each orphan among the names list returns.
func dropListed(ctx context.Context, admin *sql.DB, list string, drop func(context.Context, *sql.DB, string) error) ([]Dropped, error) {
	rows, err := admin.QueryContext(ctx, list)
	if err != nil {
		return nil, fmt.Errorf("list scratch databases: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			_ = rows.Close()
			return nil, err
		}
		names = append(names, n)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	out := []Dropped{}
	var errs []error
	for _, n := range names {
		why, gone := orphanOwner(n)
		if !gone {
			continue
		}
		if err := drop(ctx, admin, n); err != nil {
			errs = append(errs, fmt.Errorf("drop %s: %w", n, err))
			continue
		}
		out = append(out, Dropped{Name: n, Why: why})
	}
	return out, errors.Join(errs...)
}

// dropSQLiteOrphans removes the orphaned lockctl_trial_<owner>_<hex>.db
// files (with their -wal, -shm and -journal files) in directory p; a path
// that is not a directory has none.
func dropSQLiteOrphans(p string) ([]Dropped, error) {
	if p == "" {
		p = "."
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, inputErrorf("store sqlite:%s: %v", p, err)
	}
	out := []Dropped{}
	ents, err := os.ReadDir(abs)
	if err != nil {
		return out, nil // a file, or a path not made yet: no directory to look in
	}
	var errs []error
	for _, e := range ents {
		base, ok := strings.CutSuffix(e.Name(), ".db")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		why, gone := orphanOwner(base)
		if !gone {
			continue
		}
		f := filepath.Join(abs, e.Name())
		var ferrs []error
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			if err := os.Remove(f + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				ferrs = append(ferrs, err)
			}
		}
		if err := errors.Join(ferrs...); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, Dropped{Name: f, Why: why})
	}
	return out, errors.Join(errs...)
}
