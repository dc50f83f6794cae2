package contain

import (
	"bytes"
	"os"
	"strconv"
	"strings"
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

// readStat parses /proc/PID/stat; false when the process is gone.
func readStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procInfo{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return procInfo{pid: pid, ppid: ppid, state: f[0][0], start: start}, true
}

// snapshot is every process of the system at one moment, by pid.
func snapshot() map[int]procInfo {
	out := map[int]procInfo{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
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
