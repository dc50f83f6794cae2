package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"modernc.org/sqlite"
)

// openSQLite creates a fresh SQLite file at the path of sqlite:PATH (or
// lockctl_trial_<hex>.db inside PATH when it is a directory; the current
// directory when PATH is empty) and opens it in WAL mode.
func openSQLite(ctx context.Context, rawURL string) (*Scratch, error) {
	p := strings.TrimPrefix(rawURL[len("sqlite:"):], "//") // sqlite:///abs/x.db too
	if p == "" {
		p = "."
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, inputErrorf("store %s: %v", rawURL, err)
	}
	switch fi, err := os.Stat(abs); {
	case err == nil && fi.IsDir():
		abs = filepath.Join(abs, newName()+".db")
	case err == nil:
		return nil, inputErrorf("store %s: %s exists; give a path that does not exist yet, or a directory", rawURL, abs)
	case !errors.Is(err, os.ErrNotExist):
		return nil, inputErrorf("store %s: %v", rawURL, err)
	}
	// SQLite would replay a -wal or -journal left there into the new file,
	// and they are not ours to remove at the end.
	for _, suffix := range sqliteCompanions {
		if _, err := os.Lstat(abs + suffix); !errors.Is(err, os.ErrNotExist) {
			return nil, inputErrorf("store %s: %s exists; SQLite would read it as the new database's own, so give a path without -wal, -shm or -journal files beside it", rawURL, abs+suffix)
		}
	}
	// O_EXCL: a file created between the check and now is not ours to drop.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, inputErrorf("store %s: %v", rawURL, err)
	}
	_ = f.Close()
	s := &Scratch{kind: sqliteKind, url: "sqlite:" + abs, name: abs}
	s.drop = func(context.Context) error {
		errs := []error{removeIfThere(abs)}
		for _, suffix := range sqliteCompanions {
			errs = append(errs, removeIfThere(abs+suffix))
		}
		return errors.Join(errs...)
	}
	// WAL lets workers read while one writes; the busy timeout (ms) makes
	// lockctl's own judging wait for a writer instead of failing.
	dsn := abs + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)"
	if s.db, err = sql.Open("sqlite", dsn); err == nil {
		err = s.db.PingContext(ctx)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite %s: %w", abs, err), s.Drop(ctx))
	}
	return s, nil
}

// sqliteCompanions are the files SQLite keeps beside a database file (WAL
// mode's log and index, the rollback journal): none may exist at Open, so
// those Drop removes are the scratch database's own.
var sqliteCompanions = []string{"-wal", "-shm", "-journal"}

func removeIfThere(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// isSQLiteError reports whether SQLite refused the statement.
func isSQLiteError(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se)
}
