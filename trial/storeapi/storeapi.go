// Package storeapi is what lockctl links of trial/store: the shapes,
// errors and interfaces of a scratch database and of diagnose's write
// boundary, and the registry trial/store fills from its init, as a
// database/sql driver registers itself. trial/store links the SQL drivers
// (pgx, go-sql-driver/mysql, modernc.org/sqlite), whose package inits took
// about 1.1 ms of every lockctl start (issue 42: start-up within 3x a Go
// hello world); lockctl-store links it, and the commands given --store
// (trial, diagnose) hand over to lockctl-store when it is not Linked.
package storeapi

import (
	"context"
	"errors"
)

// ErrInput marks errors caused by what the user gave (an unsupported URL
// scheme, a schema that fails, a history query with the wrong columns, a
// query the server refuses); cmd maps them to exit 2. Test with errors.Is.
var ErrInput = errors.New("bad input")

// NamePrefix starts the name of every scratch database (and SQLite file).
const NamePrefix = "lockctl_trial_"

// Violation is one thing the database kept that a correct run would not
// have: a stale write, a duplicate effect or a row of the invariant query.
type Violation struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
	// Rows are the rows that show it, each value as text ("NULL" for NULL),
	// in the query's column order: for history.CodeStaleWrite the earlier
	// higher-fenced write then the stale one; for history.CodeDuplicate every
	// write with the key; for history.CodeInvariant the check's rows (at most
	// 100), its column names in Detail.
	Rows     [][]string `json:"rows,omitempty"`
	Fence    *int64     `json:"fence,omitempty"`    // the stale write's fence
	Key      *string    `json:"key,omitempty"`      // the repeated idempotency key
	Resource string     `json:"resource,omitempty"` // the stale write's resource ("" when the history has none)
}

// Dropped is one scratch database DropOrphans removed: its name (the
// SQLite file's path) and why its lockctl is known to be gone.
type Dropped struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// Scratch is one scratch database, open until Drop; trial/store's
// *Scratch documents each method.
type Scratch interface {
	URL() string  // DATABASE_URL for the workers, password included
	Name() string // database name, or the SQLite file's absolute path
	JudgeNote() string
	ApplySchema(ctx context.Context, sql string) error
	CheckQueries(ctx context.Context, historySQL, checkSQL string) error
	Judge(ctx context.Context, historySQL, checkSQL string) ([]Violation, error)
	Drop(ctx context.Context) error
}

// Boundary is a read-only connection to the user's own database.
type Boundary interface {
	// NewestFence runs the fence query q and returns its highest fence,
	// nil when it returns no row.
	NewestFence(ctx context.Context, q string) (*int64, error)
	Close() error
}

// Driver is what trial/store registers.
type Driver struct {
	Open         func(ctx context.Context, rawURL string) (Scratch, error)
	OpenBoundary func(ctx context.Context, rawURL string) (Boundary, error)
	DropOrphans  func(ctx context.Context, rawURL string) ([]Dropped, error)
}

var driver *Driver

// Register makes Open, OpenBoundary and DropOrphans use d; trial/store
// calls it from its init.
func Register(d Driver) { driver = &d }

// Linked reports whether this binary holds trial/store: false in lockctl,
// true in lockctl-store and the tests.
func Linked() bool { return driver != nil }

// Open creates a scratch database on the server rawURL names (trial/store's
// Open). It panics when trial/store is not Linked: a build mistake, not
// an input error.
func Open(ctx context.Context, rawURL string) (Scratch, error) {
	return linked().Open(ctx, rawURL)
}

// OpenBoundary connects read-only to the database rawURL names
// (trial/store's OpenBoundary); it panics as Open does.
func OpenBoundary(ctx context.Context, rawURL string) (Boundary, error) {
	return linked().OpenBoundary(ctx, rawURL)
}

// DropOrphans drops the scratch databases of killed trials on the server
// rawURL names (trial/store's DropOrphans); it panics as Open does.
func DropOrphans(ctx context.Context, rawURL string) ([]Dropped, error) {
	return linked().DropOrphans(ctx, rawURL)
}

func linked() *Driver {
	if driver == nil {
		panic("storeapi: no store registered (import trial/store)")
	}
	return driver
}
