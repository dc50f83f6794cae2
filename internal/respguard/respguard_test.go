package respguard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/lockctl/lockctl/internal/respguard"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// hostile listens on a loopback port and answers every read with reply.
// A fake server is the real thing here: a server that lies about sizes.
func hostile(t *testing.T, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					if _, err := c.Write([]byte(reply)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestHostileSizes(t *testing.T) {
	t.Parallel()
	for _, reply := range []string{"*2000000000\r\n", "$2000000000\r\n", "%9000000000\r\n", "*99999999999999999999999\r\n", "?\r\n"} {
		t.Run(strings.TrimSpace(reply), func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: hostile(t, reply), Protocol: 2, MaxRetries: -1,
				Dialer: respguard.Dialer(time.Second, nil)})
			defer c.Close()
			err := c.Ping(context.Background()).Err()
			var re *respguard.ReplyError
			if !errors.As(err, &re) {
				t.Fatalf("Ping: %v, want a *respguard.ReplyError", err)
			}
		})
	}
}

// TestRealServer reads values across the guard's bounds and read chunks:
// a value just under the bulk limit, one over it, and a pipeline of many
// small replies, against a real redis-server.
func TestRealServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	ctx := context.Background()
	key := redistest.Key(t, "v")
	big := bytes.Repeat([]byte("ab\r\n$5\r\n*9\r\n"), 100_000) // payload that looks like headers
	if err := srv.Client(t).Set(ctx, key, big, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	dial := func(maxBulk int64) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1,
			Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := net.Dial(network, addr)
				if err != nil {
					return nil, err
				}
				return respguard.Wrap(c, maxBulk, 100), nil
			}})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	got, err := dial(int64(len(big))).Get(ctx, key).Bytes()
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("GET of %d bytes under the limit: %d bytes, %v", len(big), len(got), err)
	}
	pipe := dial(int64(len(big))).Pipeline()
	for i := range 500 {
		if i%50 == 0 {
			pipe.Get(ctx, key)
		}
		pipe.Ping(ctx)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("pipeline of 510 replies: %v", err)
	}
	var re *respguard.ReplyError
	if err := dial(int64(len(big))-1).Get(ctx, key).Err(); !errors.As(err, &re) {
		t.Fatalf("GET of %d bytes over a limit of %d: %v, want a *respguard.ReplyError", len(big), len(big)-1, err)
	}
}

// TestDeepNesting: 600k levels of "*1" (2.3 MB, issue 33) overflowed
// go-redis' recursive reader, a fatal error; past DefaultMaxDepth levels
// the read fails instead. Nesting within the limit, beside maps,
// attributes and nulls, still reads.
func TestDeepNesting(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("*1\r\n", 600_000) + "+x\r\n"
	c := redis.NewClient(&redis.Options{Addr: hostile(t, deep), Protocol: 2, MaxRetries: -1,
		Dialer: respguard.Dialer(5*time.Second, nil)})
	defer c.Close()
	err := c.Ping(context.Background()).Err()
	var re *respguard.ReplyError
	if !errors.As(err, &re) || !re.Depth || !strings.Contains(err.Error(), "more than 128 levels") {
		t.Fatalf("Ping: %v, want a *respguard.ReplyError about nesting", err)
	}

	// 128 levels, a mix of maps, attributes and nulls, 128 levels again: the
	// guard has closed every level of the first, or the last would be 256.
	ok := strings.Repeat("*1\r\n", respguard.DefaultMaxDepth) + "$-1\r\n"
	mixed := "*3\r\n%1\r\n+k\r\n*0\r\n|1\r\n+a\r\n+b\r\n$2\r\nhi\r\n*-1\r\n>2\r\n:1\r\n$0\r\n\r\n"
	stream := ok + mixed + ok
	got, err := exchange(t, 3, stream)
	if err != nil || got != stream {
		t.Fatalf("read %d of %d bytes within the limits: %v", len(got), len(stream), err)
	}
	if _, err := exchange(t, 1, ok[:len(ok)-5]+ok); !errors.As(err, &re) || !re.Depth {
		t.Fatalf("256 levels: %v, want a depth error", err)
	}
}

// exchange writes n commands (EVAL: any reply type) through a guarded
// end of a pipe whose other end answers with stream, and reads it all.
func exchange(t *testing.T, n int, stream string) (string, error) {
	t.Helper()
	server, client := net.Pipe()
	go func() { _, _ = io.Copy(io.Discard, server) }()
	go func() {
		_, _ = server.Write([]byte(stream))
		_ = server.Close()
	}()
	g := respguard.Wrap(client, 1<<20, 1<<20)
	if _, err := g.Write([]byte(strings.Repeat("*1\r\n$4\r\nEVAL\r\n", n))); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(g)
	return string(got), err
}

// TestOutOfStep: a reply of a type the command never returns is refused,
// naming both (issue 33: watch read an extra reply's integer as an owner
// token and printed a TAKEOVER); so is a reply no command waits for. A
// null, an error, a push and an attribute fit any command.
func TestOutOfStep(t *testing.T) {
	t.Parallel()
	var re *respguard.ReplyError
	cmd := func(args ...string) string {
		s := fmt.Sprintf("*%d\r\n", len(args))
		for _, a := range args {
			s += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
		}
		return s
	}
	for _, tc := range []struct {
		cmds, replies, want string
	}{
		{cmd("GETRANGE", "k", "0", "9"), ":30000\r\n", `reply ":30000" to GETRANGE is not a type GETRANGE returns`},
		{cmd("PTTL", "k"), "$7\r\nowner-1\r\n", `reply "$7" to PTTL`},
		{cmd("OBJECT", "IDLETIME", "k"), "+OK\r\n", `to OBJECT IDLETIME`},
		{cmd("PING"), "+PONG\r\n:1\r\n", `reply ":1" came with no command waiting`},
		{cmd("PTTL", "k") + cmd("GET", "k") + cmd("TYPE", "k") + cmd("OBJECT", "ENCODING", "k") + cmd("SCAN", "0"),
			"|1\r\n+a\r\n+b\r\n:5\r\n>2\r\n+x\r\n+y\r\n$-1\r\n-ERR no\r\n$3\r\nraw\r\n_\r\n", ""},
	} {
		server, client := net.Pipe()
		go func() { _, _ = io.Copy(io.Discard, server) }()
		go func() {
			_, _ = server.Write([]byte(tc.replies))
			_ = server.Close()
		}()
		g := respguard.Wrap(client, 1<<20, 1<<20)
		if _, err := g.Write([]byte(tc.cmds)); err != nil {
			t.Fatal(err)
		}
		_, err := io.ReadAll(g)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want no error", tc.replies, err)
		case tc.want != "" && (!errors.As(err, &re) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want %q", tc.replies, err, tc.want)
		}
	}
}
