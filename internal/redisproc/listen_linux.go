package redisproc

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// listensOn reports whether process pid holds the listening TCP socket on
// 127.0.0.1:port. A connect alone cannot tell: when two launches race for
// one free port, the loser's connect reaches the winner's server. It reads
// /proc/net/tcp (proc(5): "sl local_address rem_address st ... inode", the
// address as hex "0100007F:PORT", LISTEN being st 0A) and looks for that
// socket's inode among /proc/PID/fd.
func listensOn(pid, port int) (bool, error) {
	inode, err := listenInode(port)
	if err != nil || inode == "" {
		return false, err
	}
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return false, err
	}
	want := "socket:[" + inode + "]"
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name()); err == nil && link == want {
			return true, nil
		}
	}
	return false, nil
}

// listenInode returns the inode of the LISTEN socket on 127.0.0.1:port,
// "" when there is none.
func listenInode(port int) (string, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", err
	}
	defer f.Close()
	local := fmt.Sprintf("0100007F:%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 9 && fields[1] == local && fields[3] == "0A" {
			return fields[9], nil
		}
	}
	return "", sc.Err()
}
