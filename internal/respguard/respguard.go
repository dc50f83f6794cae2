// Package respguard wraps a Redis connection so that a reply announcing an
// absurd size fails the read instead of the process. go-redis allocates an
// array or a bulk string at the length its header announces before reading
// a byte of it (internal/proto/reader.go, readSlice and readStringReply):
// a server answering "*2000000000" makes it ask for 32 GB and the Go
// runtime dies with "fatal error: out of memory", which no recover catches.
// go-redis also reads nested aggregates by recursion: a reply of 600k
// levels of "*1" (2.3 MB) overflows the goroutine stack, again a fatal
// error. The guard follows the RESP2/RESP3 stream as it is read and refuses
// a header above the limits, or nested too deep, before go-redis sees it.
//
// It also follows the commands written, and refuses a reply whose type the
// command never returns (an integer for GETRANGE): go-redis reads ":30000"
// as the string "30000", so a stream out of step, an extra reply from a
// broken server or proxy, shifts plausible values onto the wrong commands
// (watch saw a new owner: a bogus TAKEOVER). Failing the read drops the
// connection: the next command gets a fresh one.
package respguard

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"
)

// Default limits: Redis itself refuses bulk strings over 512 MB
// (proto-max-bulk-len), no reply lockctl asks for has a million elements,
// and none nests more than a few levels (XREAD, the deepest, 5).
const (
	DefaultMaxBulkBytes = 512 << 20
	DefaultMaxElements  = 1 << 20
	DefaultMaxDepth     = 128
)

// maxHeader bounds the bytes kept of a header line: a type byte, a length of
// at most 20 digits and CRLF.
const maxHeader = 24

// ReplyError is the error a guarded read returns once the server sent a
// reply header over the limits, or one that is not RESP.
type ReplyError struct {
	Header string
	Limit  int64
	// Depth is set when the reply nests aggregates more than Limit levels deep.
	Depth bool
	// Command is set when the reply's type is not one the command sent
	// returns ("" with Unsolicited: no command was waiting).
	Command     string
	Unsolicited bool
}

func (e *ReplyError) Error() string {
	if e.Unsolicited {
		return fmt.Sprintf("reply %q came with no command waiting: the reply stream is out of step (a broken server or proxy)", e.Header)
	}
	if e.Command != "" {
		return fmt.Sprintf("reply %q to %s is not a type %s returns: the reply stream is out of step (a broken server or proxy)", e.Header, e.Command, e.Command)
	}
	if e.Depth {
		return fmt.Sprintf("reply nests aggregates more than %d levels deep; the server is broken or not Redis", e.Limit)
	}
	if e.Limit == 0 {
		return fmt.Sprintf("malformed reply header %q from the server (not RESP)", e.Header)
	}
	return fmt.Sprintf("reply header %q announces more than lockctl accepts (%d); the server is broken or not Redis", e.Header, e.Limit)
}

// Timeout and Temporary make a ReplyError a net.Error: a connection failure.
func (e *ReplyError) Timeout() bool   { return false }
func (e *ReplyError) Temporary() bool { return false }

// Dialer returns a go-redis Dialer (redis.Options.Dialer) that dials like
// go-redis' own (TCP with timeout, then TLS when cfg is not nil) and wraps
// the connection in a guard with the default limits.
func Dialer(timeout time.Duration, cfg *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nd := &net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute}
		var c net.Conn
		var err error
		if cfg == nil {
			c, err = nd.DialContext(ctx, network, addr)
		} else {
			c, err = (&tls.Dialer{NetDialer: nd, Config: cfg}).DialContext(ctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		return Wrap(c, DefaultMaxBulkBytes, DefaultMaxElements), nil
	}
}

// Wrap returns c with its reads checked: a bulk string (or blob error,
// verbatim string) over maxBulk bytes, or an aggregate (array, set, push,
// map, attribute) over maxElems elements, or aggregates nested more than
// DefaultMaxDepth levels, fail the read with a *ReplyError, as does every
// read after it.
func Wrap(c net.Conn, maxBulk, maxElems int64) net.Conn {
	return &conn{Conn: c, maxBulk: maxBulk, maxElems: maxElems, maxDepth: DefaultMaxDepth}
}

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.sent.feed(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

type conn struct {
	net.Conn
	maxBulk, maxElems int64
	maxDepth          int
	// skip is the payload bytes (and CRLF) of the current bulk string still to come.
	skip int64
	// open holds the aggregates being read, outermost first.
	open []aggregate
	// sent follows the commands written, whose replies are still to come.
	mu   sync.Mutex
	sent commands
	// header holds the current header line, up to maxHeader bytes.
	header []byte
	err    error
}

func (c *conn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	if ferr := c.feed(p[:n]); ferr != nil {
		c.err = ferr
		return 0, ferr
	}
	return n, err
}

// feed follows the stream through b: payloads are skipped by length,
// header lines checked once complete.
func (c *conn) feed(b []byte) error {
	for len(b) > 0 {
		if c.skip > 0 {
			k := min(c.skip, int64(len(b)))
			c.skip -= k
			b = b[k:]
			if c.skip == 0 {
				c.done()
			}
			continue
		}
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if len(c.header) < maxHeader {
			c.header = append(c.header, b[:min(i, maxHeader-len(c.header))]...)
		}
		if i == len(b) { // the line goes on in the next read
			return nil
		}
		b = b[i+1:]
		if err := c.line(); err != nil {
			return err
		}
		c.header = c.header[:0]
	}
	return nil
}

// line checks a complete header line (without its LF) and sets skip.
func (c *conn) line() error {
	h := c.header
	if len(h) == 0 {
		return &ReplyError{Header: ""}
	}
	if len(c.open) == 0 {
		if err := c.matchReply(h); err != nil {
			return err
		}
	}
	var limit int64
	mult, bulk := int64(1), false
	switch h[0] {
	case '$', '!', '=':
		limit, bulk = c.maxBulk, true
	case '*', '~', '>':
		limit = c.maxElems
	case '%', '|':
		limit, mult = c.maxElems, 2
	case '+', '-', ':', ',', '#', '_', '(':
		c.done()
		return nil
	default:
		return &ReplyError{Header: string(h)}
	}
	n, ok := parseLen(h[1:])
	if !ok {
		return &ReplyError{Header: string(h)}
	}
	if n*mult > limit {
		return &ReplyError{Header: string(h[:len(h)-1]), Limit: limit}
	}
	switch {
	case bulk && n >= 0:
		c.skip = n + 2
	case !bulk && n > 0:
		if len(c.open) >= c.maxDepth {
			return &ReplyError{Header: string(h[:len(h)-1]), Limit: int64(c.maxDepth), Depth: true}
		}
		c.open = append(c.open, aggregate{left: n * mult, attr: h[0] == '|'})
	default: // a null, or an empty aggregate
		c.done()
	}
	return nil
}

// aggregate is an array, set, push, map or attribute being read.
type aggregate struct {
	left int64 // elements still to come (a map's keys and values both count)
	attr bool  // an attribute: it comes before a value and is not one itself
}

// done ends a value: it counts in the innermost open aggregate, and an
// aggregate it completes is a value of the one around it (an attribute is not).
func (c *conn) done() {
	for len(c.open) > 0 {
		top := &c.open[len(c.open)-1]
		if top.left--; top.left > 0 {
			return
		}
		attr := top.attr
		c.open = c.open[:len(c.open)-1]
		if attr {
			return
		}
	}
}

// parseLen parses "<digits>\r" or "-1\r" (a null); ok is false for
// anything else, a length too long for maxHeader included.
func parseLen(b []byte) (int64, bool) {
	if len(b) < 2 || b[len(b)-1] != '\r' {
		return 0, false
	}
	b = b[:len(b)-1]
	if string(b) == "-1" {
		return -1, true
	}
	var n int64
	for _, d := range b {
		if d < '0' || d > '9' || n > 1<<40 {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	return n, true
}
