package cmd_test

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/redistest"
)

// TestUnlockNoAnswer: a server that answers the reads but not the delete
// (CLIENT PAUSE WRITE holds every script) gives the line every command gives
// for a server too slow for --timeout, exit 3, not "context deadline
// exceeded"; a hint says the delete may have run.
func TestUnlockNoAnswer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const owner = "5f0c2b6f3e1a4d7c9b8a6e5d4c3b2a19"
	rdb.Set(bg, "lock:OrderId:order-slow-001", "7:"+owner, 0)
	if err := rdb.Do(bg, "CLIENT", "PAUSE", "20000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Do(bg, "CLIENT", "UNPAUSE") })
	for _, args := range [][]string{
		{"unlock", "order-slow-001", "--owner", owner, "--timeout", "300ms"},
		{"unlock", "order-slow-001", "--force", "--yes", "--timeout", "300ms"},
	} {
		p, code := runLockctl(t, srv.URL(), args...)
		want := "lockctl: redis " + srv.URL() + ": no answer within 300ms (--timeout)\n" +
			`The delete may have run: see with lockctl inspect --key "lock:OrderId:order-slow-001"` + "\n"
		if code != 3 || p.stderr.String() != want || strings.Contains(p.stderr.String(), "deadline") {
			t.Errorf("%v: exit %d, stderr %q; want exit 3, %q", args, code, p.stderr.String(), want)
		}
	}
}
