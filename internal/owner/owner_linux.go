package owner

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// Self is the ID of this process.
var Self = sync.OnceValue(func() ID {
	start, _ := startTime(os.Getpid())
	return ID{PID: os.Getpid(), Start: start, Boot: bootID()}
})

// bootID is the first 8 hex digits of this boot's id, "0" when unreadable.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if s := strings.TrimSpace(string(b)); err == nil && len(s) >= 8 {
		return strings.ToLower(s[:8])
	}
	return "0"
}

// startTime is pid's start time in clock ticks after boot (proc(5),
// /proc/PID/stat field 22) and whether pid exists (a zombie counts: it has
// ended but its pid is not free yet).
func startTime(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	// The command name in parentheses may hold spaces: fields start after its ')'.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return 0, false
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, false // ended: only its exit status is left
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	return start, err == nil
}
