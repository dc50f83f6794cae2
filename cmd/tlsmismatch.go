package cmd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
)

// plainProbeTimeout bounds the plain-text PING that tells a server which
// does not speak TLS from one that does not answer at all.
const plainProbeTimeout = 500 * time.Millisecond

// tlsMismatch explains a failed first PING that comes from speaking TLS to
// a plain server, or plain RESP to a TLS-only one (issue 32 §6: rediss://
// against a plain server waited the whole --timeout and said only "no
// answer"); nil when err is not such a failure. timeout is the limit that
// ran out, named by timeoutName.
func tlsMismatch(err error, opt *redis.UniversalOptions, timeout time.Duration, timeoutName string) error {
	if len(opt.Addrs) != 1 {
		return nil
	}
	addr := opt.Addrs[0]
	if opt.TLSConfig != nil {
		noTLS := strings.Contains(err.Error(), "first record does not look like a TLS handshake")
		if !noTLS && !isTimeout(err) {
			return nil
		}
		if answersPlainRESP(addr) {
			return fmt.Errorf("%s does not speak TLS: it answered a plain PING, but no TLS handshake (rediss://); use redis://, or the server's tls-port", addr)
		}
		if noTLS {
			return fmt.Errorf("%s does not speak TLS: its first reply was no TLS handshake (rediss://)", addr)
		}
		return fmt.Errorf("no answer within %s (%s) to the TLS handshake; %s did not answer a plain PING either", lockcore.FormatDuration(timeout), timeoutName, addr)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("%s closed the connection before any reply (%v): a TLS-only server does that to plain RESP; if it speaks TLS, use rediss://", addr, err)
	}
	return nil
}

// answersPlainRESP reports whether addr answers a plain-text PING with a
// RESP reply (+PONG, or an error such as -NOAUTH) within plainProbeTimeout.
func answersPlainRESP(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, plainProbeTimeout)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(plainProbeTimeout))
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return false
	}
	line, err := bufio.NewReaderSize(c, 64).ReadString('\n')
	return err == nil && (strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-"))
}
