package redisproc

import (
	"net/netip"
	"strconv"

	"github.com/lockctl/lockctl/internal/procnet"
)

// listensOn reports whether process pid holds the listening TCP socket on
// 127.0.0.1:port. A connect alone cannot tell: when two launches race for
// one free port, the loser's connect reaches the winner's server. It looks
// for the LISTEN socket's inode (/proc/net/tcp) among pid's descriptors.
func listensOn(pid, port int) (bool, error) {
	fds, err := procnet.SocketFDs("/proc/" + strconv.Itoa(pid))
	if err != nil {
		return false, err
	}
	addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port))
	for _, e := range procnet.Table("/proc/net") {
		if _, ours := fds[e.Inode]; ours && e.State == "LISTEN" && e.Local == addr {
			return true, nil
		}
	}
	return false, nil
}
