// Package procnet reads a Linux process's TCP sockets from /proc: the
// table of /proc/net/tcp{,6} and the socket inodes of /proc/PID/fd, for
// diagnose (what an old holder is connected to) and internal/redisproc
// (which process listens on a port). Elsewhere the reads fail.
package procnet

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TCPEntry is one line of /proc/net/tcp or tcp6: the socket's addresses,
// its state by name ("ESTABLISHED", "LISTEN"), its queues in bytes and its
// inode (what /proc/PID/fd links to as "socket:[inode]").
type TCPEntry struct {
	Local, Peer  netip.AddrPort
	State        string
	SendQ, RecvQ int64
	Inode        uint64
}

// tcpStates names the TCP states of /proc/net/tcp's "st" column
// (include/net/tcp_states.h).
var tcpStates = map[string]string{
	"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
	"05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT",
	"09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING", "0C": "NEW_SYN_RECV",
}

// ParseTCP reads the lines of /proc/net/tcp or tcp6 (proc_net_tcp(5)):
// "sl local rem st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout
// inode ..."; lines it cannot read are skipped.
func ParseTCP(text string) []TCPEntry {
	var out []TCPEntry
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		local, ok1 := parseHexAddr(f[1])
		peer, ok2 := parseHexAddr(f[2])
		tx, rx, ok3 := strings.Cut(f[4], ":")
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if !ok1 || !ok2 || !ok3 || err != nil {
			continue
		}
		sq, _ := strconv.ParseInt(tx, 16, 64)
		rq, _ := strconv.ParseInt(rx, 16, 64)
		st := tcpStates[strings.ToUpper(f[3])]
		if st == "" {
			st = f[3]
		}
		out = append(out, TCPEntry{Local: local, Peer: peer, State: st, SendQ: sq, RecvQ: rq, Inode: inode})
	}
	return out
}

// parseHexAddr reads "0100007F:1F90" (IPv4) or 32 hex digits and a port
// (IPv6): the address as 32-bit words in the kernel's (little-endian)
// byte order, the port in hex. IPv4-mapped IPv6 addresses are unmapped.
func parseHexAddr(s string) (netip.AddrPort, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	b, err := hex.DecodeString(a)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(b); i += 4 {
		binary.BigEndian.PutUint32(b[i:], binary.LittleEndian.Uint32(b[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), true
}

// Table reads tcp and tcp6 of a /proc net directory ("/proc/net", or
// "/proc/PID/net" for that process's namespace); a file it cannot read
// adds nothing.
func Table(netDir string) []TCPEntry {
	var out []TCPEntry
	for _, name := range []string{"tcp", "tcp6"} {
		if b, err := os.ReadFile(filepath.Join(netDir, name)); err == nil {
			out = append(out, ParseTCP(string(b))...)
		}
	}
	return out
}

// SocketFDs maps the socket inodes of a process's descriptors (pidDir is
// "/proc/PID") to the descriptors; an error when they cannot be read
// (another user's process, without root).
func SocketFDs(pidDir string) (map[uint64]int, error) {
	entries, err := os.ReadDir(pidDir + "/fd")
	if err != nil {
		return nil, err
	}
	out := map[uint64]int{}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		link, err := os.Readlink(pidDir + "/fd/" + e.Name())
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			if n, err := strconv.ParseUint(strings.TrimSuffix(inode, "]"), 10, 64); err == nil {
				out[n] = fd
			}
		}
	}
	return out, nil
}
