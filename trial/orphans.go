package trial

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockctl/lockctl/internal/contain"
	"github.com/lockctl/lockctl/internal/owner"
)

// Kinds of scratch state an Orphan is.
const (
	OrphanDatabase = "database"
	OrphanRedisDir = "redis-dir"
	OrphanCgroup   = "cgroup"
)

// orphanDirFailed starts the Why of a directory DropOrphans could not remove.
const orphanDirFailed = "could not remove: "

// Orphan is one piece of scratch state a killed trial left, dropped: its
// kind (OrphanDatabase, OrphanRedisDir, "cgroup", "process"), its name (a
// path, "pid N", or a database's name) and why its lockctl is known to be
// gone.
type Orphan struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	Why  string `json:"why"`
}

// DropOrphans removes the scratch state of trials whose lockctl is provably
// gone (internal/owner: another boot, its pid gone or reused), as a trial
// killed with SIGKILL leaves it: scratch Redis directories in dir (""
// os.TempDir()), the cgroups of its workers and the helpers they left
// running (internal/contain). A name that does not parse,
// or whose lockctl still runs, is left alone. A directory that cannot be
// removed is listed with "could not remove: " and the error in Why.
func DropOrphans(dir string) []Orphan {
	if dir == "" {
		dir = os.TempDir()
	}
	out := []Orphan{}
	for _, d := range contain.DropOrphans() {
		out = append(out, Orphan{Kind: d.Kind, Name: d.Name, Why: d.Why})
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), redisDirPrefix)
		i := strings.LastIndexByte(rest, '-')
		if !ok || !e.IsDir() || i < 0 {
			continue
		}
		id, ok := owner.Parse(rest[:i])
		if !ok {
			continue
		}
		if gone, why := id.Gone(); gone {
			p := filepath.Join(dir, e.Name())
			if err := os.RemoveAll(p); err != nil {
				why = fmt.Sprintf("%s%v (%s)", orphanDirFailed, err, why)
			}
			out = append(out, Orphan{Kind: OrphanRedisDir, Name: p, Why: why})
		}
	}
	return out
}
