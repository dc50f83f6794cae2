// Package owner names the lockctl process that created a piece of scratch
// state (a database, a directory, a cgroup), so that a later lockctl can
// tell whether that creator is provably gone and the state orphaned. It
// never deletes anything itself.
package owner

import (
	"fmt"
	"strconv"
	"strings"
)

// ID identifies one process across pid reuse and reboots: its pid, its
// start time (clock ticks after boot, proc(5) /proc/PID/stat field 22; 0
// where unknown) and the first 8 hex digits of the boot id
// (/proc/sys/kernel/random/boot_id; "0" where unknown).
type ID struct {
	PID   int
	Start uint64
	Boot  string
}

// String is the ID as it appears in names: PID_START_BOOT, lower-case
// digits and hex only, so a database name needs no quoting.
func (id ID) String() string {
	return strconv.Itoa(id.PID) + "_" + strconv.FormatUint(id.Start, 10) + "_" + id.Boot
}

// Parse reads the String form; false for anything else (a name lockctl
// did not make this way, which must then be left alone).
func Parse(s string) (ID, bool) {
	f := strings.Split(s, "_")
	if len(f) != 3 || f[2] == "" || len(f[2]) > 8 {
		return ID{}, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 || strconv.Itoa(pid) != f[0] {
		return ID{}, false
	}
	start, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil || strconv.FormatUint(start, 10) != f[1] {
		return ID{}, false
	}
	for _, r := range f[2] {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return ID{}, false
		}
	}
	return ID{PID: pid, Start: start, Boot: f[2]}, true
}

// Gone reports whether the process id names has provably ended, and why
// (one phrase for a log line): another boot, no such pid, or the pid now
// belongs to a process started at another time. A process this system
// cannot tell apart (no boot id, no start time) is never gone.
func (id ID) Gone() (bool, string) {
	self := Self()
	if self.Boot == "0" || id.Boot == "0" {
		return false, "this system gives no boot id"
	}
	if id.Boot != self.Boot {
		return true, fmt.Sprintf("pid %d ran before the last reboot", id.PID)
	}
	start, alive := startTime(id.PID)
	switch {
	case !alive:
		return true, fmt.Sprintf("pid %d is gone", id.PID)
	case start != id.Start:
		return true, fmt.Sprintf("pid %d is another process now", id.PID)
	}
	return false, fmt.Sprintf("pid %d still runs", id.PID)
}
