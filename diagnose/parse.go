package diagnose

import (
	"net/netip"
	"strconv"
	"strings"
)

// stateName words a state letter of /proc/PID/stat.
func stateName(letter byte) string {
	switch string(letter) {
	case "R":
		return "running"
	case "S":
		return "sleeping"
	case "D":
		return "disk_wait"
	case "T":
		return "stopped"
	case "t":
		return "tracing_stop"
	case "Z":
		return "zombie"
	case "X", "x":
		return "dead"
	case "I":
		return "idle"
	}
	return string(letter)
}

// fdFirst are the calls whose first argument is the file descriptor they
// work on, by what they do with it.
var fdFirst = map[string]string{
	"read": "read", "readv": "read", "pread64": "read", "preadv": "read", "preadv2": "read",
	"recvfrom": "read", "recvmsg": "read", "recvmmsg": "read",
	"write": "write", "writev": "write", "pwrite64": "write", "sendto": "write", "sendmsg": "write", "sendmmsg": "write",
	"connect": "connect", "accept": "accept", "accept4": "accept",
	"fsync": "sync", "fdatasync": "sync", "flock": "lock",
}

// parseSyscall reads /proc/PID/task/TID/syscall: "running", "-1 sp pc"
// (blocked outside a call), or "nr arg1 ... arg6 sp pc". It returns the
// call's name and, for a call in fdFirst, its file descriptor.
func parseSyscall(text string) (string, *int) {
	f := strings.Fields(text)
	if len(f) == 0 || f[0] == "-1" {
		return "", nil
	}
	if f[0] == "running" {
		return "running", nil
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		return "", nil
	}
	name, ok := syscallNames[nr]
	if !ok {
		return "syscall " + f[0], nil
	}
	if _, takesFD := fdFirst[name]; takesFD && len(f) > 1 {
		if fd, err := strconv.ParseInt(strings.TrimPrefix(f[1], "0x"), 16, 32); err == nil {
			n := int(fd)
			return name, &n
		}
	}
	return name, nil
}

// waits are the calls a thread waits in for any of several descriptors or
// for another thread: a blocked read shows as one of these in programs with
// an event loop (Go's netpoller, libuv, asyncio).
var waits = map[string]bool{
	"poll": true, "ppoll": true, "select": true, "pselect6": true, "epoll_wait": true,
	"epoll_pwait": true, "epoll_pwait2": true, "futex": true, "nanosleep": true, "clock_nanosleep": true,
}

// parseClientList reads CLIENT LIST's reply: one client a line, fields
// name=value separated by spaces (the values lockctl reads hold none).
func parseClientList(text string) []Client {
	var out []Client
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var c Client
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "id":
				c.ID, _ = strconv.ParseInt(v, 10, 64)
			case "addr":
				c.Addr = v
			case "laddr":
				c.LAddr = v
			case "name":
				c.Name = v
			case "age":
				c.AgeS, _ = strconv.ParseInt(v, 10, 64)
			case "idle":
				c.IdleS, _ = strconv.ParseInt(v, 10, 64)
			case "cmd":
				c.Cmd = v
			case "lib-name":
				c.LibName = v
			case "lib-ver":
				c.LibVer = v
			}
		}
		out = append(out, c)
	}
	return out
}

// parseAddrPort reads a CLIENT LIST address ("127.0.0.1:5000",
// "[::1]:5000"), unmapping IPv4-mapped IPv6.
func parseAddrPort(s string) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}
