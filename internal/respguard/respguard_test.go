package respguard_test

import (
	"bytes"
	"context"
	"errors"
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
