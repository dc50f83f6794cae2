package contain

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helperTree starts, in a new tree of s, a shell that starts one helper in
// a session of its own (setsid) and one that double-forks away from it at
// once, and returns the tree, the shell and both helpers' pids.
func helperTree(t *testing.T, s *Set) (*Tree, *exec.Cmd, []int) {
	t.Helper()
	tr := s.Tree("w1")
	c := exec.Command("sh", "-c", `setsid sleep 3001 & echo $!; (setsid sleep 3002 & echo $!); exec sleep 3000`)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Kill(); _ = c.Wait() })
	sc := bufio.NewScanner(out)
	var pids []int
	for len(pids) < 2 && sc.Scan() {
		pid, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if len(pids) < 2 {
		t.Fatalf("helpers' pids: %v", pids)
	}
	for _, pid := range pids { // each must really have left the shell's session
		waitFor(t, "its own session", func() bool { p, ok := readStat(pid); return ok && session(pid) == pid && p.pid == pid })
	}
	return tr, c, pids
}

// session is pid's session id (proc(5) field 6).
func session(pid int) int {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	n, _ := strconv.Atoi(f[3])
	return n
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not %s within 5s", what)
		}
	}
}

// gone: no such process, not even a zombie (it was reaped).
func gone(pid int) bool { _, err := os.Stat("/proc/" + strconv.Itoa(pid)); return err != nil }

// paused: state T (SIGSTOP), or frozen in its cgroup.
func paused(s *Set, tr *Tree, pid int) bool {
	if s.Mode() == ModeCgroup {
		for _, m := range cgroupMembers(tr.dir) {
			if m.pid == pid {
				return cgroupEvent(tr.dir, "frozen")
			}
		}
		return false
	}
	p, ok := readStat(pid)
	return ok && p.state == 'T'
}

// Every mode the machine has pauses, continues and kills helpers that left
// the session, and Close leaves none of them, not even a zombie.
func TestTreeReachesHelpersInOtherSessions(t *testing.T) {
	modes := []string{ModeSubreaper}
	if s, err := New(ModeCgroup); err == nil {
		_ = s.Close()
		modes = append(modes, ModeCgroup)
	} else {
		t.Logf("no cgroup mode here: %v", err)
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s, err := New(mode)
			if err != nil {
				t.Fatal(err)
			}
			if s.Mode() != mode {
				t.Fatalf("mode %s, want %s", s.Mode(), mode)
			}
			tr, c, pids := helperTree(t, s)
			if err := tr.Pause(); err != nil {
				t.Fatal(err)
			}
			for _, pid := range append(pids, c.Process.Pid) {
				// Its SIGSTOP is pending once Pause returns: a starved CPU shows state T when it next runs the process.
				waitFor(t, "paused (state T, or frozen): pid "+strconv.Itoa(pid), func() bool { return paused(s, tr, pid) })
			}
			if err := tr.Continue(); err != nil {
				t.Fatal(err)
			}
			for _, pid := range pids {
				waitFor(t, "running again", func() bool { p, _ := readStat(pid); return p.state == 'S' })
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			_ = c.Wait()
			for _, pid := range pids {
				waitFor(t, "gone after Close", func() bool { return gone(pid) })
			}
			if mode == ModeCgroup {
				if _, err := os.Stat(s.dir); err == nil {
					t.Errorf("cgroup %s left after Close", s.dir)
				}
			}
		})
	}
}

// subreaperShell starts script (which prints one helper's pid first) in a
// tree of a subreaper Set closed at the test's end; it returns the tree,
// the shell and that pid.
func subreaperShell(t *testing.T, script string) (*Tree, *exec.Cmd, int) {
	t.Helper()
	s, err := New(ModeSubreaper)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	tr := s.Tree("w1")
	c := exec.Command("sh", "-c", script)
	out, _ := c.StdoutPipe()
	if err := tr.Start(c); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return tr, c, pid
}

// After the command exits on its own, Kill still finds the helper it left
// (re-parented to this process) and reaps it.
func TestKillAfterTheCommandExited(t *testing.T) {
	t.Parallel()
	tr, c, pid := subreaperShell(t, `setsid sleep 3003 & echo $!`)
	_ = c.Wait()
	tr.Exited()
	waitFor(t, "adopted", func() bool { p, _ := readStat(pid); return p.ppid == os.Getpid() })
	tr.Kill()
	if !gone(pid) {
		p, _ := readStat(pid)
		t.Fatalf("helper %d left in state %c", pid, p.state)
	}
}

// A tree runs one command after another: each starts alive, even after
// the one before was killed (a cgroup killed once kills what is cloned
// into it on Linux 6.18, so each command gets a fresh one).
func TestTreeRestartsAfterKill(t *testing.T) {
	t.Parallel()
	s, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tr := s.Tree("w1")
	for i := range 3 {
		c := exec.Command("sh", "-c", `sleep 300 & exit 3`)
		if err := tr.Start(c); err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(); c.ProcessState.ExitCode() != 3 {
			t.Fatalf("%s start %d: %v, want exit status 3", s.Mode(), i+1, err)
		}
		tr.Exited()
		tr.Kill()
	}
}

// A helper that ended while its parent, which never waits, still ran is a
// zombie of that parent, not of lockctl: a walk then keeps it known, so
// Kill reaps it once the parent's death hands it to this process.
func TestKillReapsAZombieAdoptedLate(t *testing.T) {
	t.Parallel()
	// The helper ends once its parent is sleep: sh reaps a child that ends before its exec.
	tr, c, pid := subreaperShell(t, `setsid sh -c 'until [ "$(cat /proc/$PPID/comm)" = sleep ]; do sleep 0.01; done' & echo $!; exec sleep 3004`)
	waitFor(t, "a zombie of sleep", func() bool { p, ok := readStat(pid); return ok && p.state == 'Z' && p.ppid == c.Process.Pid })
	tr.mu.Lock()
	tr.walk(snapshot()) // what the subreaper's poll does between faults
	tr.mu.Unlock()
	tr.Kill()
	_ = c.Wait()
	if !gone(pid) {
		p, _ := readStat(pid)
		t.Fatalf("helper %d left in state %c, parent %d", pid, p.state, p.ppid)
	}
}

// A child of lockctl whose environment reads empty, as while it execs (the
// helper the command left was missed that way under load, and ran on), is
// not taken for a stranger at once: the walk counts it, and Kill walks
// again until its environment shows (bounded: 1s).
func TestWalkCountsAChildItCannotRead(t *testing.T) {
	// Not parallel: the other tests' children, mid-exec, are this process's
	// children too, and the count must be this helper's alone.
	tr, c, pid := subreaperShell(t, `env -i setsid sleep 3005 & echo $!`)
	_ = c.Wait()
	tr.Exited()
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL); _, _ = unix.Wait4(pid, nil, 0, nil) })
	waitFor(t, "adopted", func() bool { p, _ := readStat(pid); return p.ppid == os.Getpid() && p.state == 'S' })
	tr.mu.Lock()
	_, _, unread := tr.walk(snapshot())
	tr.mu.Unlock()
	if unread != 1 {
		t.Fatalf("walk counted %d children it could not read, want 1 (the helper with no environment)", unread)
	}
	tr.Kill()
	if gone(pid) {
		t.Error("Kill killed a process it could not tell was the tree's")
	}
}

// TestFailedStartLeavesNoCgroup: a command that cannot start (a bad #!
// line) left the cgroup made for it, every retry another one, and Close
// then could not remove the Set's: each next trial said it "dropped what
// killed trials left" though none was killed.
func TestFailedStartLeavesNoCgroup(t *testing.T) {
	s, err := New(ModeCgroup)
	if err != nil {
		t.Skipf("no writable cgroup v2 here: %v", err)
	}
	bad := t.TempDir() + "/bad.sh"
	if err := os.WriteFile(bad, []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tr := s.Tree("w1")
	for range 3 {
		if err := tr.Start(exec.Command(bad)); err == nil {
			t.Fatal("a bad #! line started")
		}
	}
	if subs, _ := os.ReadDir(s.dir); len(cgroupDirs(subs)) != 0 {
		t.Errorf("after 3 failed starts, %s holds %v: want no cgroup left", s.dir, cgroupDirs(subs))
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := os.Stat(s.dir); err == nil {
		t.Errorf("the Set's cgroup %s is still there after Close", s.dir)
	}
}

// cgroupDirs names the child cgroups among a cgroup directory's entries.
func cgroupDirs(es []os.DirEntry) []string {
	var out []string
	for _, e := range es {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}
