package diagnose

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/procnet"
	"github.com/lockctl/lockctl/internal/procstat"
)

// procNote is empty: /proc is there to read.
const procNote = ""

// userHZ is the unit of /proc/PID/stat's start time: USER_HZ, 100 on every
// Linux architecture (times(2)), whatever the kernel's own HZ.
const userHZ = 100

// procReader reads /proc at one moment: the uptime and lockctl's own
// scheduler clock that ages and off-CPU times are measured against.
type procReader struct {
	now      time.Time
	uptimeMS int64
	// selfExecMS is se.exec_start of lockctl's own thread (ms in the
	// scheduler's clock), 0 when the kernel does not show it.
	selfExecMS float64
}

func newProcReader(now time.Time) *procReader {
	r := &procReader{now: now}
	if b, err := os.ReadFile("/proc/uptime"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			s, _ := strconv.ParseFloat(f[0], 64)
			r.uptimeMS = int64(s * 1000)
		}
	}
	r.selfExecMS = execStart("/proc/thread-self/sched")
	return r
}

// execStart reads se.exec_start (ms, the scheduler's clock) from a sched
// file; 0 when absent (a kernel without CONFIG_SCHED_DEBUG).
func execStart(path string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "se.exec_start" {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

// process reads /proc/PID; it returns an error wrapping ErrNoProcess when
// there is no such process.
func (r *procReader) process(pid int) (Process, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return Process{}, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	if err != nil {
		return Process{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	st, ok := procstat.Parse(b)
	if !ok {
		return Process{}, fmt.Errorf("pid %d: /proc/%d/stat does not parse", pid, pid)
	}
	p := Process{PID: pid, PPID: st.PPID, Comm: st.Comm, State: stateName(st.State), Threads: []Thread{}, Connections: []Conn{}}
	if comm, err := os.ReadFile(dir + "/comm"); err == nil {
		p.Comm = strings.TrimSpace(string(comm))
	}
	if r.uptimeMS > 0 {
		p.AgeMS = max(r.uptimeMS-int64(st.StartTicks)*1000/userHZ, 0)
		p.StartedAt = r.now.Add(-time.Duration(p.AgeMS) * time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	unreadable := map[string]bool{}
	note := func(file string, err error) {
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !unreadable[file] {
			unreadable[file] = true
			p.Unreadable = append(p.Unreadable, file+": "+errText(err))
		}
	}
	p.Threads = r.threads(dir, note)
	p.Connections = connections(dir, note)
	p.Run = runChild(dir, note)
	return p, nil
}

// errText is an fs error without its path ("permission denied").
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func (r *procReader) threads(dir string, note func(string, error)) []Thread {
	entries, err := os.ReadDir(dir + "/task")
	note("task", err)
	out := []Thread{}
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		td := dir + "/task/" + e.Name()
		b, err := os.ReadFile(td + "/stat")
		st, ok := procstat.Parse(b)
		if err != nil || !ok {
			continue // the thread ended while being read
		}
		t := Thread{TID: tid, Comm: st.Comm, State: stateName(st.State)}
		if w, err := os.ReadFile(td + "/wchan"); err == nil && string(w) != "0" {
			t.WChan = strings.TrimSpace(string(w))
		} else {
			note("wchan", err)
		}
		if s, err := os.ReadFile(td + "/syscall"); err == nil {
			t.Syscall, t.FD = parseSyscall(string(s))
		} else {
			note("syscall", err)
		}
		if x := execStart(td + "/sched"); x > 0 && r.selfExecMS > 0 && t.State != "running" {
			off := int64(max(r.selfExecMS-x, 0))
			t.OffCPUMS = &off
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TID < out[j].TID })
	return out
}

// connections are the TCP sockets of the process in its own network
// namespace (/proc/PID/net), ordered by descriptor.
func connections(dir string, note func(string, error)) []Conn {
	fds, err := procnet.SocketFDs(dir)
	note("fd", err)
	out := []Conn{}
	if len(fds) == 0 {
		return out
	}
	for _, e := range procnet.Table(dir + "/net") {
		if fd, ok := fds[e.Inode]; ok {
			out = append(out, Conn{FD: fd, Local: e.Local.String(), Peer: e.Peer.String(), State: e.State, SendQueue: e.SendQ, RecvQueue: e.RecvQ})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FD < out[j].FD })
	return out
}

// runChild reads LOCKCTL_KEY and LOCKCTL_FENCE from /proc/PID/environ and
// nothing else: every other variable is skipped unread into any result.
func runChild(dir string, note func(string, error)) *RunChild {
	b, err := os.ReadFile(dir + "/environ")
	note("environ", err)
	var rc *RunChild
	for _, kv := range bytes.Split(b, []byte{0}) {
		switch {
		case bytes.HasPrefix(kv, []byte("LOCKCTL_KEY=")):
			if rc == nil {
				rc = &RunChild{}
			}
			rc.Key = string(kv[len("LOCKCTL_KEY="):])
		case bytes.HasPrefix(kv, []byte("LOCKCTL_FENCE=")):
			if rc == nil {
				rc = &RunChild{}
			}
			if n, err := strconv.ParseInt(string(kv[len("LOCKCTL_FENCE="):]), 10, 64); err == nil {
				rc.Fence = &n
			}
		}
	}
	return rc
}

// childrenOf returns the PIDs whose parent is pid, lowest first: from the
// kernel's children files, else from every process's stat.
func childrenOf(pid int) []int {
	kids, ok := procstat.Children(pid)
	if !ok {
		for _, p := range procstat.PIDs() {
			if st, err := procstat.Read(p); err == nil && st.PPID == pid {
				kids = append(kids, p)
			}
		}
	}
	sort.Ints(kids)
	return kids
}

// runChildrenFor returns the PIDs of the processes lockctl may read whose
// LOCKCTL_KEY is key: lockctl run children, also those whose lockctl is
// gone and that hold no Redis connection of their own.
func runChildrenFor(key string) []int {
	var out []int
	for _, pid := range procstat.PIDs() {
		if rc := runChild("/proc/"+strconv.Itoa(pid), func(string, error) {}); rc != nil && rc.Key == key {
			out = append(out, pid)
		}
	}
	return out
}

// socketOwners maps each TCP connection of this network namespace, by its
// local and peer address, to the process holding it; it also returns how
// many processes' descriptors could not be read (another user's, without
// root).
func socketOwners() (map[[2]netip.AddrPort]int, int) {
	byInode := map[uint64]int{}
	hidden := 0
	for _, pid := range procstat.PIDs() {
		fds, err := procnet.SocketFDs("/proc/" + strconv.Itoa(pid))
		if err != nil {
			hidden++
			continue
		}
		for inode := range fds {
			byInode[inode] = pid
		}
	}
	out := map[[2]netip.AddrPort]int{}
	for _, e := range procnet.Table("/proc/net") {
		if pid, ok := byInode[e.Inode]; ok {
			out[[2]netip.AddrPort{e.Local, e.Peer}] = pid
		}
	}
	return out, hidden
}
