package store_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/owner"
	"github.com/lockctl/lockctl/trial/store"
)

// DropOrphans drops a scratch database whose lockctl is gone, and leaves a
// live lockctl's (this test's own) and one named without an owner alone.
func TestDropOrphans(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("owners are told apart through /proc")
	}
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	gone := owner.ID{PID: c.Process.Pid, Start: 1, Boot: owner.Self().Boot}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	// foreign: the name an older lockctl gave, with no owner in it.
	orphan, foreign := store.NamePrefix+gone.String()+"_"+hex.EncodeToString(b[:3]), store.NamePrefix+hex.EncodeToString(b)
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := srv.url(t)
			live := open(t, srv)
			create, exists := makeDB(t, srv, url)
			create(orphan)
			create(foreign)
			got, err := store.DropOrphans(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range got {
				names = append(names, filepath.Base(d.Name))
			}
			wantName := orphan
			if srv.name == "sqlite" {
				wantName += ".db"
			}
			if !slices.Contains(names, wantName) || slices.Contains(names, filepath.Base(live.Name())) || slices.Contains(names, foreign) {
				t.Errorf("dropped %v: want %s and neither the live %s nor %s", names, wantName, live.Name(), foreign)
			}
			if exists(orphan) || !exists(foreign) || !exists(live.Name()) {
				t.Errorf("after DropOrphans: orphan there %v, foreign there %v, live there %v", exists(orphan), exists(foreign), exists(live.Name()))
			}
		})
	}
}

// makeDB returns functions that create a database named name on srv as
// lockctl would have (for SQLite: a file in its directory), and tell
// whether it exists.
func makeDB(t *testing.T, srv server, url string) (func(string), func(string) bool) {
	t.Helper()
	dir := strings.TrimPrefix(url, "sqlite:")
	name := func(n string) string {
		if srv.name == "sqlite" {
			return filepath.Join(dir, n+".db")
		}
		return n
	}
	var db *sql.DB
	if srv.name != "sqlite" {
		db = workerDB(t, srv, open(t, srv)) // an account that may create databases
	}
	var made []string
	t.Cleanup(func() {
		for _, n := range made {
			if db != nil {
				_, _ = db.Exec("DROP DATABASE IF EXISTS " + n)
			}
		}
	})
	return func(n string) {
			made = append(made, n)
			var err error
			if db == nil {
				err = os.WriteFile(name(n), nil, 0o644)
			} else {
				_, err = db.Exec("CREATE DATABASE " + n)
			}
			if err != nil {
				t.Fatal(err)
			}
		}, func(n string) bool {
			if srv.name == "sqlite" && strings.HasPrefix(n, "/") {
				return exists(t, srv, n)
			}
			return exists(t, srv, name(n))
		}
}
