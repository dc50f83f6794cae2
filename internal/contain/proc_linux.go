package contain

import (
	"bytes"
	"os"
	"strconv"

	"github.com/lockctl/lockctl/internal/procstat"
)

// procInfo is one process as /proc/PID/stat shows it (proc(5)).
type procInfo struct {
	pid, ppid int
	state     byte
	start     uint64 // field 22: clock ticks after boot
}

// member is a process known as a tree's: pid and start time, so a reused
// pid is never taken for it.
type member struct {
	pid   int
	start uint64
}

// readStat reads /proc/PID/stat; false when the process is gone.
func readStat(pid int) (procInfo, bool) {
	st, err := procstat.Read(pid)
	if err != nil {
		return procInfo{}, false
	}
	return procInfo{pid: pid, ppid: st.PPID, state: st.State, start: st.StartTicks}, true
}

// snapshot is every process of the system at one moment, by pid.
func snapshot() map[int]procInfo {
	out := map[int]procInfo{}
	for _, pid := range procstat.PIDs() {
		if p, ok := readStat(pid); ok {
			out[pid] = p
		}
	}
	return out
}

// hasMarker reports whether pid's environment holds MarkerEnv=id, and
// whether it could be read: it cannot (empty) while the process execs, as
// the new image's environment is not set up yet (execve(2)).
func hasMarker(pid int, id string) (found, read bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || len(b) == 0 {
		return false, false
	}
	want := []byte(MarkerEnv + "=" + id)
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if bytes.Equal(kv, want) {
			return true, true
		}
	}
	return false, true
}

// alive reports whether p has not ended (a zombie has).
func (p procInfo) alive() bool { return p.state != 'Z' && p.state != 'X' }
