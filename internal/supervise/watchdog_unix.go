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
// itself (findChildGroups; Linux only): every 2ms while lockctl is not
// stopped, once as it stops, then every 100ms while it stays stopped. Only
// a lockctl killed within a look's interval after the fork can leave it
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
// lease could end (a little later than lockctl's own, see until). It
// returns once the watchdog runs (waitReady), or halfway from now to
// provableUntil (the lease's end less the grace) at the latest.
func startWatchdog(start func(*exec.Cmd) error, grace time.Duration, provableUntil time.Time) (*watchdog, error) {
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
	ready, readyW, err := os.Pipe()
	if err != nil {
		w.Close()
		return nil, err
	}
	defer ready.Close()
	c := exec.Command(self, WatchdogArg, strconv.Itoa(os.Getpid()))
	c.Args[0] = os.Args[0]
	c.Stdin, c.Stdout = r, readyW
	// A session of its own: a Ctrl-Z sent to lockctl's group before the
	// child leaves it is then discarded (its group is orphaned, POSIX
	// 2.4.3 job control), not kept to stop it before its exec. Stopped
	// there, it held the forking thread in vfork, and a garbage collection
	// waiting for that thread froze all of lockctl for good.
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = start(c)
	readyW.Close()
	if err != nil {
		w.Close()
		return nil, err
	}
	waitReady(ready, time.Until(provableUntil)/2)
	return &watchdog{cmd: c, w: w, grace: grace}, nil
}

// readyWait bounds how long lockctl waits for its watchdog to run.
const readyWait = 2 * time.Second

// waitReady waits, min(readyWait, most) at most, for the byte the watchdog
// writes on its stdout as it starts following lockctl: before the child
// starts. A watchdog still starting up (an exec of this binary: some 10ms,
// far more under load) could not seek the child of a lockctl killed after
// its fork, and what the child started ran on (TestRunKilledAfterFork,
// beside two CPU burners). Past that the child starts all the same: the
// wait must not eat the lease the child runs under.
func waitReady(ready *os.File, most time.Duration) {
	var b [1]byte
	_ = ready.SetReadDeadline(time.Now().Add(min(readyWait, max(most, 0))))
	_, _ = ready.Read(b[:])
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
// signals a terminal or a job's kill send do not stop it. It writes one
// byte on its stdout as it starts (waitReady).
func RunWatchdog(parent int) error {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGPIPE)
	_, _ = os.Stdout.Write([]byte{'.'})
	_ = os.Stdout.Close()
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
			wd.seek()
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
	// watched: the watch line came; lockctl's start of the child is over.
	watched bool
	// lastLook is when seek last looked (CLOCK_MONOTONIC, ns); wasStopped,
	// that lockctl was stopped then.
	lastLook   int64
	wasStopped bool
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
		s.pgid, s.watched = int(n[1]), true
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

// seekEvery is how often the watchdog looks for the child's group between
// the deadline before the fork and the watch line while lockctl is not
// stopped; seekSlow while it stays stopped (it forks nothing then). A look
// reads lockctl's children files, a few small ones: every /proc/PID/stat
// (1.5ms with 90 processes) every 2ms was a core's worth of CPU for as long
// as lockctl stayed stopped, and slowing to 100ms after the first 100ms
// left a lockctl slow to reach its fork (CPU starvation), then killed after
// it, unfound (TestRunKilledAfterFork: 2 of 3 runs beside two CPU burners).
const (
	seekEvery = 2 * time.Millisecond
	seekSlow  = 100 * time.Millisecond
)

// seeking is seek's channel while the child may have been started but its
// group was not named (a deadline came, no watch line), nil otherwise: a
// SIGKILLed lockctl's child gets another parent, and /proc then no longer
// ties it to lockctl. Only Linux has the /proc to seek in.
func (s *watchdogState) seeking(seek *time.Ticker) <-chan time.Time {
	if s.watched || s.kill == 0 || runtime.GOOS != "linux" {
		return nil
	}
	return seek.C
}

// seek continues a child of lockctl stopped before its exec (see
// continueBeforeExec), then takes the one child group findChildGroups
// finds as the child's, and SIGKILLs it when that was due already (late),
// as the watch line would: a lockctl stopped again before it writes that
// line would leave the child running past the lease. It looks on every tick while lockctl
// is not stopped, as it stops (what it forked before is there), and every
// seekSlow while it stays stopped.
func (s *watchdogState) seek() {
	stopped, now := isStopped(s.parent), monotonicNow()
	if stopped && s.wasStopped && now-s.lastLook < int64(seekSlow) {
		return
	}
	s.wasStopped, s.lastLook = stopped, now
	continueBeforeExec(s.parent)
	if s.pgid != 0 {
		return
	}
	if g := findChildGroups(s.parent); len(g) == 1 {
		s.pgid = g[0]
		if s.late {
			s.signal(syscall.SIGKILL)
		}
	}
}

// signal sends sig to the child's group. Not told one yet (lockctl frozen
// between the fork and the watch line), it signals the groups that
// findChildGroups finds, and a SIGKILL also the group a later watch line
// names or seek finds (late).
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

// stoppedTimer is a timer that has not been set.
func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}
