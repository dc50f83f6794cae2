package contain

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/internal/owner"
	"github.com/lockctl/lockctl/internal/supervise"
	"golang.org/x/sys/unix"
)

// pollEvery spaces the subreaper mode's walks of /proc between faults, so
// that a helper is known before its parent exits and it re-parents.
const pollEvery = 100 * time.Millisecond

// cgroupPrefix starts the name of each Set's cgroup: lockctl-<owner>-<n>.
const cgroupPrefix = "lockctl-"

var setSeq atomic.Int64

// subreaper makes this process the child subreaper once (prctl(2)); it
// stays one, as other Sets may run beside.
var subreaper = sync.OnceValue(func() error { return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })

// Set is the trees of one owner (a trial), contained alike. Close it.
type Set struct {
	mode  string
	id    string
	dir   string // cgroup mode: the Set's cgroup
	mu    sync.Mutex
	trees []*Tree
	stop  chan struct{}
	done  chan struct{}
}

// New returns a Set in mode want, or in the best one available when want
// is "": cgroup where a cgroup v2 with cgroup.freeze and cgroup.kill can be
// made beside this process, else subreaper. It returns an error when want
// cannot be had (naming why), or when this process cannot be a subreaper.
func New(want string) (*Set, error) {
	if err := subreaper(); err != nil {
		return nil, fmt.Errorf("cannot become the child subreaper: %w", err)
	}
	s := &Set{mode: ModeSubreaper, id: owner.Self().String() + "-" + strconv.FormatInt(setSeq.Add(1), 10), stop: make(chan struct{}), done: make(chan struct{})}
	switch want {
	case "", ModeCgroup:
		base, err := cgroupBase()
		if err == nil {
			dir := filepath.Join(base, cgroupPrefix+s.id)
			if err = makeCgroup(dir); err == nil {
				s.mode, s.dir = ModeCgroup, dir
			}
		}
		if err != nil && want == ModeCgroup {
			return nil, fmt.Errorf("no writable cgroup v2: %w", err)
		}
	case ModeSubreaper:
	default:
		return nil, fmt.Errorf("containment %q is not one of %s, %s", want, ModeCgroup, ModeSubreaper)
	}
	go s.poll()
	return s, nil
}

// Mode is the mechanism in use: ModeCgroup or ModeSubreaper.
func (s *Set) Mode() string { return s.mode }

// Tree returns a new tree named name (a worker slot: letters and digits),
// for one command at a time.
func (s *Set) Tree(name string) *Tree {
	t := &Tree{s: s, name: name, id: s.id + "." + name, known: map[int]member{}}
	s.mu.Lock()
	s.trees = append(s.trees, t)
	s.mu.Unlock()
	return t
}

// Close kills every process left in the Set's trees, reaps the orphans
// among them and removes the cgroups; it returns the removal's errors.
func (s *Set) Close() error {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	trees := s.trees
	s.mu.Unlock()
	var errs []error
	for _, t := range trees {
		errs = append(errs, t.kill())
	}
	if s.dir != "" {
		errs = append(errs, removeCgroup(s.dir))
	}
	return errors.Join(errs...)
}

// poll walks the subreaper mode's trees every pollEvery until Close.
func (s *Set) poll() {
	defer close(s.done)
	if s.mode != ModeSubreaper {
		return
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		trees := s.trees
		s.mu.Unlock()
		snap := snapshot()
		for _, t := range trees {
			t.mu.Lock()
			t.walk(snap)
			t.mu.Unlock()
		}
	}
}

// Tree is one command and everything it starts.
type Tree struct {
	s      *Set
	name   string
	id     string
	mu     sync.Mutex
	dir    string // cgroup mode: the running command's cgroup, "" between two
	starts int
	root   *member
	known  map[int]member // subreaper mode: every live process seen in it
}

// Start starts c in the tree: the leader of a process group of its own,
// SIGKILLed should lockctl die (supervise.GroupAttr), with MarkerEnv in its
// environment and, in cgroup mode, inside a fresh cgroup from its first
// instruction (clone3 CLONE_INTO_CGROUP). A fresh one each time: Linux
// 6.18 kills every process cloned into a cgroup that was cgroup.killed
// before. It returns c.Start's error, or the cgroup's; a cgroup made for a
// command that did not start is removed.
func (t *Tree) Start(c *exec.Cmd) error {
	c.SysProcAttr = supervise.GroupAttr()
	if c.Env == nil {
		c.Env = os.Environ()
	}
	c.Env = append(c.Env, MarkerEnv+"="+t.id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.s.mode == ModeCgroup {
		t.starts++
		dir := filepath.Join(t.s.dir, t.name+"-"+strconv.Itoa(t.starts))
		if err := makeCgroup(dir); err != nil {
			return err
		}
		fd, err := os.Open(dir)
		if err != nil {
			_ = os.Remove(dir)
			return err
		}
		defer fd.Close()
		c.SysProcAttr.UseCgroupFD, c.SysProcAttr.CgroupFD = true, int(fd.Fd())
		t.dir = dir
	}
	if err := c.Start(); err != nil {
		if t.dir != "" { // nothing started in it: a retry makes the next one
			_ = os.Remove(t.dir)
			t.dir = ""
		}
		return err
	}
	p, _ := readStat(c.Process.Pid)
	t.root = &member{pid: c.Process.Pid, start: p.start}
	return nil
}

// Exited tells the tree that its command was waited for: its pid is free.
func (t *Tree) Exited() {
	t.mu.Lock()
	t.root = nil
	t.mu.Unlock()
}

// walk finds the tree's live processes in snap: the root, the processes
// known before, and the children of lockctl carrying the tree's marker,
// with all their descendants. It records them as known (but the root) and
// returns them; zombies (but the root) are returned in reap and stay known
// until gone: one whose parent still runs is adopted by lockctl later.
// unread counts lockctl's unknown children whose environment it could not
// read (mid-exec): maybe the tree's, for a walk again.
func (t *Tree) walk(snap map[int]procInfo) (live, reap []member, unread int) {
	kids := map[int][]int{}
	for _, p := range snap {
		kids[p.ppid] = append(kids[p.ppid], p.pid)
	}
	var queue []int
	same := func(m member) bool { p, ok := snap[m.pid]; return ok && p.start == m.start }
	if t.root != nil && same(*t.root) {
		queue = append(queue, t.root.pid)
	}
	for _, m := range t.known {
		if same(m) {
			queue = append(queue, m.pid)
		}
	}
	self := os.Getpid()
	for _, pid := range kids[self] {
		if _, ok := t.known[pid]; ok || (t.root != nil && pid == t.root.pid) || !snap[pid].alive() {
			continue
		}
		switch found, read := hasMarker(pid, t.id); {
		case found:
			queue = append(queue, pid)
		case !read:
			unread++
		}
	}
	seen := map[int]bool{}
	known := map[int]member{}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		p := snap[pid]
		m := member{pid: pid, start: p.start}
		isRoot := t.root != nil && pid == t.root.pid
		switch {
		case p.alive():
			live = append(live, m)
			if !isRoot {
				known[pid] = m
			}
		case !isRoot: // a zombie: kept known, as its parent may die and hand it to lockctl
			reap = append(reap, m)
			known[pid] = m
		}
		queue = append(queue, kids[pid]...)
	}
	t.known = known
	return live, reap, unread
}

// Pause stops every process of the tree until Continue: cgroup.freeze, or
// SIGSTOP to each process walked, again until a walk finds no new one.
func (t *Tree) Pause() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.s.mode == ModeCgroup {
		if t.dir == "" {
			return errors.New("no command running")
		}
		if err := writeCgroup(t.dir, "cgroup.freeze", "1"); err != nil {
			return err
		}
		if !waitCgroup(t.dir, "frozen", true, time.Second) {
			return errors.New("cgroup did not freeze within 1s")
		}
		return nil
	}
	_, _ = t.stopAll()
	return nil
}

// stopAll SIGSTOPs the tree walk by walk until no walk finds a process not
// stopped yet, nor a child of lockctl it could not read (for up to 1s;
// bounded: 100 walks); it returns what it stopped and the tree's zombies,
// for reapAdopted to collect once they are lockctl's.
func (t *Tree) stopAll() (all, zombies []member) {
	stopped := map[member]bool{}
	unreadUntil := time.Now().Add(time.Second)
	for range 100 {
		live, reap, unread := t.walk(snapshot())
		zombies = append(zombies, reap...)
		fresh := false
		for _, m := range live {
			if !stopped[m] {
				stopped[m], fresh = true, true
				all = append(all, m)
				_ = unix.Kill(m.pid, unix.SIGSTOP)
			}
		}
		if !fresh && (unread == 0 || time.Now().After(unreadUntil)) {
			break
		}
		if fresh {
			waitStopped(all)
		} else {
			time.Sleep(10 * time.Millisecond) // an exec to finish
		}
	}
	return all, zombies
}

// waitStopped waits up to 200ms until each of ms is stopped or gone: a
// stopped process forks no more, so the next walk sees all it started.
func waitStopped(ms []member) {
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		all := true
		for _, m := range ms {
			if p, ok := readStat(m.pid); ok && p.start == m.start && p.alive() && p.state != 'T' && p.state != 't' {
				all = false
				break
			}
		}
		if all {
			return
		}
	}
}

// Continue resumes the tree after Pause.
func (t *Tree) Continue() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.s.mode == ModeCgroup {
		if t.dir == "" {
			return nil
		}
		return writeCgroup(t.dir, "cgroup.freeze", "0")
	}
	t.signalAll(unix.SIGCONT)
	return nil
}

// Terminate sends SIGTERM to every process of the tree (and SIGCONT, so a
// stopped one can act on it).
func (t *Tree) Terminate() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dir != "" {
		_ = writeCgroup(t.dir, "cgroup.freeze", "0")
	}
	t.signalAll(unix.SIGCONT)
	t.signalAll(unix.SIGTERM)
}

// signalAll sends sig to each live process of the tree; in cgroup mode it
// records them as known, so that Kill reaps those that end as lockctl's.
func (t *Tree) signalAll(sig syscall.Signal) {
	var live []member
	if t.s.mode == ModeCgroup {
		live = cgroupMembers(t.dir)
		for _, m := range live {
			if t.root == nil || m != *t.root {
				t.known[m.pid] = m
			}
		}
	} else {
		live, _, _ = t.walk(snapshot())
	}
	for _, m := range live {
		_ = unix.Kill(m.pid, sig)
	}
}

// Kill kills every process of the tree (cgroup.kill, then the cgroup is
// removed; or stopped walk by walk, then SIGKILL) and reaps the orphans
// among them lockctl adopted, waiting up to 2s for them to end.
func (t *Tree) Kill() { _ = t.kill() }

// kill is Kill, returning the error of removing the cgroup.
func (t *Tree) kill() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var victims []member
	var err error
	if t.s.mode == ModeCgroup {
		if t.dir == "" {
			return nil
		}
		victims = cgroupMembers(t.dir)
		for _, m := range t.known {
			victims = append(victims, m)
		}
		err = removeCgroup(t.dir)
		t.dir = ""
	} else {
		var zombies []member
		victims, zombies = t.stopAll()
		for _, m := range victims {
			_ = unix.Kill(m.pid, unix.SIGKILL)
		}
		victims = append(victims, zombies...)
	}
	t.known = map[int]member{}
	reapAdopted(victims, t.root)
	return err
}

// reapAdopted waits up to 2s for each of ms to end, collecting the exit
// status of those lockctl adopted (but root, which its exec.Cmd waits for).
func reapAdopted(ms []member, root *member) {
	self := os.Getpid()
	for end := time.Now().Add(2 * time.Second); len(ms) > 0 && time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		left := ms[:0]
		for _, m := range ms {
			p, ok := readStat(m.pid)
			switch {
			case !ok || p.start != m.start:
			case root != nil && *root == m:
				if p.alive() {
					left = append(left, m)
				}
			case !p.alive() && p.ppid == self:
				_, _ = unix.Wait4(m.pid, nil, unix.WNOHANG, nil)
			default:
				left = append(left, m) // running, or a zombie its parent will reap
			}
		}
		ms = left
	}
}

// cgroupMembers lists the processes in dir's cgroup.procs.
func cgroupMembers(dir string) []member {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	var out []member
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			if p, ok := readStat(pid); ok {
				out = append(out, member{pid: pid, start: p.start})
			}
		}
	}
	return out
}

// Dropped is one thing DropOrphans removed: Kind "cgroup" (Name its path)
// or "process" (Name "pid N"), and why its lockctl is known to be gone.
type Dropped struct{ Kind, Name, Why string }

// DropOrphans kills what is left of the trees of Sets whose lockctl is
// provably gone (internal/owner; it was killed): their cgroups, killed and
// removed, and any process whose environment carries their MarkerEnv (a
// helper that left its session, adopted by init once lockctl died). It
// returns what it removed or killed.
func DropOrphans() []Dropped {
	out := killMarked()
	base, err := cgroupBase()
	if err != nil {
		return out
	}
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), cgroupPrefix)
		i := strings.LastIndexByte(rest, '-')
		if !ok || !e.IsDir() || i < 0 {
			continue
		}
		gone, why := setGone(rest[:i])
		if !gone {
			continue
		}
		dir := filepath.Join(base, e.Name())
		subs, _ := os.ReadDir(dir)
		for _, sub := range subs {
			if sub.IsDir() {
				_ = removeCgroup(filepath.Join(dir, sub.Name()))
			}
		}
		if removeCgroup(dir) == nil {
			out = append(out, Dropped{Kind: "cgroup", Name: dir, Why: why})
		}
	}
	return out
}

// setGone reports whether the lockctl of a Set id's owner part is provably
// gone, and why.
func setGone(ownerPart string) (bool, string) {
	id, ok := owner.Parse(ownerPart)
	if !ok {
		return false, ""
	}
	return id.Gone()
}

// killMarked SIGKILLs each process whose MarkerEnv names a Set of a gone
// lockctl, and reports them.
func killMarked() []Dropped {
	var out []Dropped
	self := owner.Self().String() + "-"
	for pid := range snapshot() {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			continue
		}
		for kv := range strings.SplitSeq(string(b), "\x00") {
			v, ok := strings.CutPrefix(kv, MarkerEnv+"=")
			i := strings.LastIndexByte(v, '-')
			if !ok || i < 0 || strings.HasPrefix(v, self) {
				continue
			}
			if gone, why := setGone(v[:i]); gone && unix.Kill(pid, unix.SIGKILL) == nil {
				out = append(out, Dropped{Kind: "process", Name: "pid " + strconv.Itoa(pid), Why: why})
			}
			break
		}
	}
	return out
}
