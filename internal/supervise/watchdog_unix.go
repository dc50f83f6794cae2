//go:build unix

package supervise

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// watchdog is the second lockctl process that run starts before the child.
// It stops the child's process group when lockctl cannot: should lockctl
// die (SIGKILL, the OOM killer, a crash) it SIGKILLs the group at once, and
// should lockctl be stopped or starved (SIGSTOP, a GC pause, a VM freeze of
// the one process, CPU starvation) past the instant the lease can no
// longer be proven, it stops the group by then, as lockctl would have:
// a stopped lockctl renews nothing, and the lease would pass to another
// holder while the child ran on. PR_SET_PDEATHSIG reaches the child alone,
// and what the child started (sh -c 'a; b' runs a and b as its children)
// would run on without the lock, past the lease.
//
// The watchdog runs in a process group of its own, away from the
// terminal's signals, and learns of lockctl's end from its stdin: a pipe
// whose other end only lockctl holds. On it lockctl writes lines:
//
//	watch PGID          the child's process group
//	until TERM KILL     SIGTERM at TERM, SIGKILL at KILL (CLOCK_MONOTONIC, ns;
//	                    TERM 0: none), unless a later line moves them
//	stop KILL           lockctl stops the child itself: no SIGTERM, SIGKILL
//	                    at KILL (lockctl's own, within the lease)
//
// lockctl writes an until line after each confirmed acquire and renewal,
// the acquire's before it starts the child, and the watch line after: a
// lockctl frozen or killed in between leaves the watchdog a deadline but
// no group, so until the watch line comes the watchdog looks for the child
// itself (findChildGroups; Linux only): every 2ms for 100ms, then every
// 100ms. Only a lockctl killed within those first milliseconds after the
// fork (or, once stopped 100ms before it, within 100ms after) can leave it
// unfound.
// Once the watchdog has sent its SIGTERM it goes on to the SIGKILL: a
// later until line can only bring that earlier.
type watchdog struct {
	cmd   *exec.Cmd
	w     *os.File
	grace time.Duration
	mu    sync.Mutex
	// provenUntil is the last lease end (ValidUntil) the watchdog was told:
	// from provenUntil − grace on it may have signalled the child.
	provenUntil time.Time
	// stopping: lockctl stops the child itself; deadlines move no more.
	stopping bool
}

// startWatchdog starts the watchdog with start (jobControl.start: a stop
// signal sent to lockctl's group between the fork and the exec would hold
// it there, and exec.Cmd.Start with it). It runs this very binary
// (/proc/self/exe on Linux: the file may have been replaced since). grace
// is run's --grace: the watchdog's SIGTERM comes that long before the
// lease could end (a little later than lockctl's own, see until).
func startWatchdog(start func(*exec.Cmd) error, grace time.Duration) (*watchdog, error) {
	self := "/proc/self/exe"
	if runtime.GOOS != "linux" {
		var err error
		if self, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	r, w, err := os.Pipe() // close-on-exec: the child does not hold it
	if err != nil {
		return nil, err
	}
	defer r.Close()
	c := exec.Command(self, WatchdogArg, strconv.Itoa(os.Getpid()))
	c.Args[0] = os.Args[0]
	c.Stdin = r
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := start(c); err != nil {
		w.Close()
		return nil, err
	}
	return &watchdog{cmd: c, w: w, grace: grace}, nil
}

// watch tells the watchdog the child's process group; d may be nil (no
// watchdog), as for every method. renewed told it the acquire's lease end
// before the child started.
func (d *watchdog) watch(pgid int) {
	if d != nil {
		d.write(fmt.Sprintf("watch %d\n", pgid))
	}
}

// renewed tells the watchdog the lease end validUntil of a confirmed
// renewal. Past the SIGTERM time already told it says nothing: the
// watchdog may have signalled the child, which must not go on as if
// nothing happened (see mayHaveStopped). The watchdog's SIGTERM comes
// lag = grace/4 (at most 50ms) after lockctl's own, so that a live
// lockctl's SIGTERM is the only one; its SIGKILL comes lag before
// validUntil: a watchdog woken that late (CPU starvation) still kills
// inside the lease. A live lockctl that stops the child moves it (stop).
func (d *watchdog) renewed(validUntil time.Time) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping || (!d.provenUntil.IsZero() && !time.Now().Before(d.provenUntil.Add(-d.grace))) {
		return
	}
	d.provenUntil = validUntil
	lag := min(d.grace/4, 50*time.Millisecond)
	d.until(validUntil.Add(-d.grace+lag), validUntil.Add(-lag))
}

// stop tells the watchdog that lockctl stops the child itself: SIGKILL at
// killAt at the latest, no SIGTERM of its own.
func (d *watchdog) stop(killAt time.Time) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopping = true
	d.write(fmt.Sprintf("stop %d\n", monotonicNow()+int64(time.Until(killAt))))
}

// until writes an until line; no SIGTERM when term is not before kill.
func (d *watchdog) until(term, kill time.Time) {
	now := monotonicNow()
	t := int64(0)
	if term.Before(kill) {
		t = max(now+int64(time.Until(term)), 1)
	}
	d.write(fmt.Sprintf("until %d %d\n", t, now+int64(time.Until(kill))))
}

// write writes line without waiting: to a watchdog that no longer reads
// (stopped itself, its pipe full) the line is lost, leaving it an earlier
// deadline, rather than holding the renewer (and its lost-lease timer).
// The pipe is non-blocking (os.Pipe); RawConn.Write with a callback that
// returns true tries once.
func (d *watchdog) write(line string) {
	rc, err := d.w.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Write(func(fd uintptr) bool {
		_, _ = unix.Write(int(fd), []byte(line))
		return true
	})
}

// mayHaveStopped reports whether the watchdog may have signalled the
// child: the SIGTERM time of the last lease end it was told has come.
func (d *watchdog) mayHaveStopped() bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.stopping && !d.provenUntil.IsZero() && !time.Now().Before(d.provenUntil.Add(-d.grace))
}

// done ends the watchdog once the child's group is gone: SIGKILL and wait,
// at once, where a "done" message had lockctl wait for the watchdog's own
// start-up (some 20ms) when the command was short. Left to exit after
// lockctl, it would stay a zombie under a parent that does not reap (a
// container's PID 1 that is not an init).
func (d *watchdog) done() {
	if d == nil {
		return
	}
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
	_ = d.w.Close()
}

// monotonicNow is CLOCK_MONOTONIC in ns: one clock for lockctl and its
// watchdog (a time.Time's monotonic reading counts from its own process's
// start; the wall clock may step).
func monotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// RunWatchdog is the watchdog of the lockctl whose pid is parent, what the
// binary runs when its arguments are WatchdogArg and that pid: it follows
// what lockctl writes on its stdin (watchdog's lines) and, when that ends
// (lockctl is gone), SIGKILLs the last process group it was told and
// returns nil. lockctl SIGKILLs it first when it ends normally. The
// signals a terminal or a job's kill send do not stop it.
func RunWatchdog(parent int) error {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	lines := make(chan string)
	go func() {
		for in := bufio.NewScanner(os.Stdin); in.Scan(); {
			lines <- in.Text()
		}
		close(lines)
	}()
	wd := watchdogState{parent: parent}
	term, kill := stoppedTimer(), stoppedTimer()
	seek := time.NewTicker(seekEvery)
	defer seek.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				wd.signal(syscall.SIGKILL)
				return nil
			}
			wd.read(line, term, kill)
		case <-wd.seeking(seek):
			wd.seek(seek)
		case <-term.C:
			wd.final = true
			wd.signal(syscall.SIGTERM)
		case <-kill.C:
			wd.signal(syscall.SIGKILL)
		}
	}
}

// watchdogState is what the watchdog was told and has done.
type watchdogState struct {
	parent int // lockctl's pid
	pgid   int
	kill   int64 // the SIGKILL time set (CLOCK_MONOTONIC, ns), 0 for none
	// final: a SIGTERM was sent or lockctl stops the child itself; the
	// SIGKILL time only comes earlier from then on.
	final bool
	// late: the SIGKILL was due before the watch line came (lockctl frozen
	// before or just after the fork); the group it names, or seek finds, is
	// SIGKILLed at once.
	late bool
	// seekFrom is when seeking began (CLOCK_MONOTONIC, ns), 0 before;
	// slowed, that it looks every seekSlow since.
	seekFrom int64
	slowed   bool
}

// read applies one line of lockctl's to the timers; malformed lines are
// ignored (lockctl writes them all).
func (s *watchdogState) read(line string, term, kill *time.Timer) {
	f := strings.Fields(line)
	n := make([]int64, len(f))
	for i := 1; i < len(f); i++ {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || v < 0 {
			return
		}
		n[i] = v
	}
	switch {
	case len(f) == 2 && f[0] == "watch" && n[1] > 1:
		s.pgid = int(n[1])
		if s.late {
			s.signal(syscall.SIGKILL)
		}
	case len(f) == 3 && f[0] == "until" && !s.final:
		term.Stop()
		if n[1] > 0 {
			term.Reset(time.Duration(n[1] - monotonicNow()))
		}
		s.setKill(n[2], kill)
	case len(f) == 3 && f[0] == "until":
		s.setKill(min(n[2], s.kill), kill)
	case len(f) == 2 && f[0] == "stop":
		// lockctl's own SIGKILL time, never past the lease's end.
		s.final = true
		term.Stop()
		s.setKill(n[1], kill)
	}
}

// setKill sets the SIGKILL time at (CLOCK_MONOTONIC, ns).
func (s *watchdogState) setKill(at int64, kill *time.Timer) {
	s.kill = at
	kill.Reset(time.Duration(at - monotonicNow()))
}

// seekEvery is how often the watchdog looks for the child's group in
// /proc between the deadline before the fork and the watch line, for
// seekFast; then every seekSlow. One look reads every /proc/PID/stat
// (1.5ms for 90 processes): every 2ms for longer was a core's worth of
// CPU for as long as lockctl stayed stopped before its fork, for ever if
// nobody resumed it, and taken from a lockctl starved of CPU. Once the
// fork is reached, the watch line follows within microseconds.
const (
	seekEvery = 2 * time.Millisecond
	seekFast  = 100 * time.Millisecond
	seekSlow  = 100 * time.Millisecond
)

// seeking is seek's channel while the child may have been started but its
// group was not named (a deadline came, no watch line), nil otherwise: a
// SIGKILLed lockctl's child gets another parent, and /proc then no longer
// ties it to lockctl. Only Linux has the /proc to seek in.
func (s *watchdogState) seeking(seek *time.Ticker) <-chan time.Time {
	if s.pgid != 0 || s.kill == 0 || runtime.GOOS != "linux" {
		return nil
	}
	return seek.C
}

// seek takes the one child group findChildGroups finds as the child's,
// and SIGKILLs it when that was due already (late), as the watch line
// would: a lockctl stopped again before it writes that line would leave
// the child running past the lease. Past seekFast it slows seek down.
func (s *watchdogState) seek(seek *time.Ticker) {
	if s.seekFrom == 0 {
		s.seekFrom = monotonicNow()
	}
	if g := findChildGroups(s.parent); len(g) == 1 {
		s.pgid = g[0]
		if s.late {
			s.signal(syscall.SIGKILL)
		}
		return
	}
	if !s.slowed && monotonicNow()-s.seekFrom >= int64(seekFast) {
		s.slowed = true
		seek.Reset(seekSlow)
	}
}

// signal sends sig to the child's group. Not told one yet (lockctl frozen
// between the fork and the watch line), it signals the groups that
// findChildGroups finds, and the group a later watch line names.
func (s *watchdogState) signal(sig syscall.Signal) {
	if s.pgid > 1 {
		_ = syscall.Kill(-s.pgid, sig)
		return
	}
	// A SIGTERM after the SIGKILL must not clear late: a watchdog woken
	// past both times finds both timers ready and selects them in any order.
	s.late = s.late || sig == syscall.SIGKILL
	for _, g := range findChildGroups(s.parent) {
		_ = syscall.Kill(-g, sig)
	}
}

// findChildGroups returns the pids of parent's children that lead their
// own process group, the watchdog aside: run's child (Setpgid), which
// lockctl may not have named yet. It reads /proc/PID/stat (proc(5):
// "pid (comm) state ppid pgrp ..."), so finds none but on Linux.
func findChildGroups(parent int) []int {
	if runtime.GOOS != "linux" || parent <= 1 {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	var groups []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		i := strings.LastIndexByte(string(b), ')') // comm may hold spaces and ')'
		if err != nil || i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 3 && f[1] == strconv.Itoa(parent) && f[2] == e.Name() {
			groups = append(groups, pid)
		}
	}
	return groups
}

// stoppedTimer is a timer that has not been set.
func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}
