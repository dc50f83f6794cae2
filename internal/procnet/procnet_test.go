package procnet

import "testing"

func TestParseTCP(t *testing.T) {
	// Lines as Linux 6.x writes them: IPv4 loopback, and an IPv6 peer of a
	// dual-stack socket (::ffff:10.0.0.7, port 443) with bytes queued.
	v4 := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:9C40 0100007F:18EB 01 00000000:00000000 00:00000000 00000000  1000        0 123456 1 0000000000000000 20 4 30 10 -1
   1: 0100007F:6448 00000000:0000 0A 00000000:00000005 00:00000000 00000000   106        0 6347 1 0000000020771b8f 100 0 0 10 0
`
	v6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0000000000000000FFFF00000100007F:D431 0000000000000000FFFF00000700000A:01BB 01 0000002A:00000000 01:00000014 00000000  1000        0 654321 1 0000000000000000 20 4 30 10 -1
   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 777 1 0000000000000000 100 0 0 10 0
`
	got := append(ParseTCP(v4), ParseTCP(v6)...)
	want := []struct {
		local, peer, state string
		sendQ, recvQ       int64
		inode              uint64
	}{
		{"127.0.0.1:40000", "127.0.0.1:6379", "ESTABLISHED", 0, 0, 123456},
		{"127.0.0.1:25672", "0.0.0.0:0", "LISTEN", 0, 5, 6347},
		{"127.0.0.1:54321", "10.0.0.7:443", "ESTABLISHED", 42, 0, 654321},
		{"[::1]:8080", "[::]:0", "LISTEN", 0, 0, 777},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Local.String() != w.local || g.Peer.String() != w.peer || g.State != w.state || g.SendQ != w.sendQ || g.RecvQ != w.recvQ || g.Inode != w.inode {
			t.Errorf("entry %d = %v %v %s %d %d %d, want %+v", i, g.Local, g.Peer, g.State, g.SendQ, g.RecvQ, g.Inode, w)
		}
	}
}
