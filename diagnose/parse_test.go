package diagnose

import (
	"strconv"
	"testing"
)

func TestStateName(t *testing.T) {
	for letter, want := range map[byte]string{'T': "stopped", 't': "tracing_stop", 'D': "disk_wait", 'W': "W"} {
		if got := stateName(letter); got != want {
			t.Errorf("stateName(%q) = %q, want %q", letter, got, want)
		}
	}
}

func TestParseSyscall(t *testing.T) {
	name, fd := parseSyscall("running")
	if name != "running" || fd != nil {
		t.Errorf("running: %q %v", name, fd)
	}
	if name, _ := parseSyscall("-1 0x7ffd 0x7f00"); name != "" {
		t.Errorf("blocked outside a call: %q", name)
	}
	if name, _ := parseSyscall("99999 0x0 0x0 0x0 0x0 0x0 0x0 0x1 0x2"); name != "syscall 99999" {
		t.Errorf("an unnamed call: %q", name)
	}
	for nr, n := range syscallNames {
		if n != "recvfrom" {
			continue
		}
		name, fd := parseSyscall(strconv.Itoa(nr) + " 0x1a 0x7ffe 0x1 0x0 0x0 0x0 0x7ffe 0x7f0b")
		if name != "recvfrom" || fd == nil || *fd != 26 {
			t.Errorf("recvfrom on fd 0x1a: %q %v", name, fd)
		}
	}
}

func TestParseClientList(t *testing.T) {
	// Redis 7.2's format: lib-name and lib-ver from CLIENT SETINFO.
	cs := parseClientList("id=7 addr=127.0.0.1:51234 laddr=127.0.0.1:6379 fd=9 name=payments age=193 idle=187 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=0 tot-mem=1928 events=r cmd=evalsha user=default redir=-1 resp=3 lib-name=go-redis(,go1.26.8) lib-ver=9.23.0\n" +
		"id=9 addr=[::1]:40000 laddr=[::1]:6379 fd=10 name= age=1 idle=0 flags=N db=0 cmd=client|list user=default\n")
	if len(cs) != 2 {
		t.Fatalf("got %d clients", len(cs))
	}
	c := cs[0]
	if c.ID != 7 || c.Addr != "127.0.0.1:51234" || c.LAddr != "127.0.0.1:6379" || c.Name != "payments" || c.AgeS != 193 || c.IdleS != 187 || c.Cmd != "evalsha" || c.LibName != "go-redis(,go1.26.8)" || c.LibVer != "9.23.0" {
		t.Errorf("client = %+v", c)
	}
	if ap, ok := parseAddrPort(cs[1].Addr); !ok || ap.String() != "[::1]:40000" {
		t.Errorf("IPv6 addr %q: %v %v", cs[1].Addr, ap, ok)
	}
}

func TestExternalCall(t *testing.T) {
	fd := 5
	ext := Conn{FD: 5, Peer: "10.0.0.7:443", State: "ESTABLISHED"}
	redisConn := Conn{FD: 7, Peer: "127.0.0.1:6379", State: "ESTABLISHED", Redis: true}
	// A thread in recvfrom on fd 5: certain.
	p := &Process{Threads: []Thread{{TID: 1, Syscall: "futex"}, {TID: 2, Syscall: "recvfrom", FD: &fd}}, Connections: []Conn{redisConn, ext}}
	if c := externalCall(p); c == nil || c.Peer != ext.Peer || c.How != "read" || c.TID != 2 {
		t.Errorf("read on fd 5: %+v", c)
	}
	// Only waits (a Go program's netpoller), one connection not to Redis: likely.
	p.Threads = []Thread{{TID: 1, Syscall: "futex"}, {TID: 2, Syscall: "epoll_pwait"}}
	if c := externalCall(p); c == nil || c.How != "only_connection" || c.Peer != ext.Peer {
		t.Errorf("only waits: %+v", c)
	}
	// A running thread, or two candidate connections: nothing can be told.
	p.Threads = []Thread{{TID: 1, Syscall: "running", State: "running"}}
	if c := externalCall(p); c != nil {
		t.Errorf("running: %+v", c)
	}
	p.Threads = []Thread{{TID: 1, Syscall: "futex"}}
	p.Connections = append(p.Connections, Conn{FD: 9, Peer: "10.0.0.8:5432", State: "ESTABLISHED"})
	if c := externalCall(p); c != nil {
		t.Errorf("two connections: %+v", c)
	}
}
