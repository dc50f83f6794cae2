//go:build !linux

package contain

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"sync"

	"github.com/lockctl/lockctl/internal/supervise"
)

// errNoGroups: Windows has no process groups to stop and continue.
var errNoGroups = errors.New("lockctl trial needs a Unix system (process groups, SIGSTOP)")

// Set is the trees of one owner; without /proc each is a process group.
type Set struct{}

// New returns a Set in process-group mode (want "" or ModeProcessGroup),
// or an error on Windows or for another mode.
func New(want string) (*Set, error) {
	if runtime.GOOS == "windows" {
		return nil, errNoGroups
	}
	if want != "" && want != ModeProcessGroup {
		return nil, errors.New("containment " + want + " needs Linux")
	}
	return &Set{}, nil
}

// Mode is ModeProcessGroup.
func (s *Set) Mode() string { return ModeProcessGroup }

// Tree returns a new tree (a process group per command).
func (s *Set) Tree(string) *Tree { return &Tree{} }

// Close has nothing to remove: each Tree's Kill ended its group.
func (s *Set) Close() error { return nil }

// Tree is one command's process group.
type Tree struct {
	mu sync.Mutex
	p  *os.Process
}

// Start starts c as the leader of its own process group.
func (t *Tree) Start(c *exec.Cmd) error {
	c.SysProcAttr = supervise.GroupAttr()
	if err := c.Start(); err != nil {
		return err
	}
	t.mu.Lock()
	t.p = c.Process
	t.mu.Unlock()
	return nil
}

// Exited keeps the group's id: helpers left in it are still killed.
func (t *Tree) Exited() {}

func (t *Tree) proc() *os.Process {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.p
}

// Pause stops the process group (SIGSTOP).
func (t *Tree) Pause() error {
	if p := t.proc(); p != nil {
		return supervise.PauseGroup(p)
	}
	return nil
}

// Continue continues the process group.
func (t *Tree) Continue() error {
	if p := t.proc(); p != nil {
		return supervise.ContinueGroup(p)
	}
	return nil
}

// Terminate sends SIGCONT and SIGTERM to the process group.
func (t *Tree) Terminate() {
	if p := t.proc(); p != nil {
		_ = supervise.ContinueGroup(p)
		_ = supervise.TerminateGroup(p)
	}
}

// Kill sends SIGKILL to the process group.
func (t *Tree) Kill() {
	if p := t.proc(); p != nil {
		_ = supervise.KillGroup(p)
	}
}

// Dropped is one thing DropOrphans removed: Kind, Name, and why.
type Dropped struct{ Kind, Name, Why string }

// DropOrphans has no cgroups to look at.
func DropOrphans() []Dropped { return nil }
