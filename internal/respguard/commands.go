package respguard

import (
	"bytes"
	"strings"
)

// replyTypes are the RESP types (first bytes) each command lockctl reads
// with may return, besides an error, a null and an attribute; a command not
// listed may return any (EVALSHA, HELLO, CLIENT). Source: the Redis command
// reference's "RESP2/RESP3 reply" sections.
var replyTypes = map[string]string{
	"PING": "+", "TYPE": "+", "SELECT": "+", "AUTH": "+", "PEXPIRE": ":",
	"PTTL": ":", "PEXPIRETIME": ":", "OBJECT IDLETIME": ":", "STRLEN": ":", "HLEN": ":",
	"LLEN": ":", "SCARD": ":", "ZCARD": ":", "DBSIZE": ":", "EXISTS": ":", "INCR": ":", "DEL": ":", "UNLINK": ":",
	"GETRANGE": "$", "GET": "$", "INFO": "$=",
	"SCAN": "*", "HSCAN": "*", "SSCAN": "*", "ZSCAN": "*", "LRANGE": "*", "ZRANGE": "*", "MGET": "*", "KEYS": "*",
}

// expect is a command sent and the reply types it may return ("" for any).
type expect struct{ name, types string }

// maxName bounds the bytes of a command's name and subcommand kept.
const maxName = 32

// commands follows the commands written to a connection (RESP arrays of
// bulk strings, as go-redis writes them) and queues, for each, the reply
// types it may return.
type commands struct {
	pending []expect // per command awaiting its reply, in the order sent
	line    []byte   // the current header line, up to maxHeader bytes
	args    int      // bulk strings of the current command still to come
	arg     int      // index of the bulk string being read
	skip    int      // payload bytes (and CRLF) of the current bulk still to come
	name    []string // the command's first two arguments, upper-cased
	payload []byte   // the current bulk's payload kept, up to maxName bytes
}

func (w *commands) feed(b []byte) {
	for len(b) > 0 {
		if w.skip > 0 {
			k := min(w.skip, len(b))
			if w.arg < 2 {
				w.payload = append(w.payload, b[:min(k, max(0, maxName-len(w.payload)))]...)
			}
			w.skip -= k
			b = b[k:]
			if w.skip == 0 {
				w.endArg()
			}
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.line = append(w.line, b[:min(len(b), max(0, maxHeader-len(w.line)))]...)
			return
		}
		w.line = append(w.line, b[:min(i, max(0, maxHeader-len(w.line)))]...)
		b = b[i+1:]
		w.header()
		w.line = w.line[:0]
	}
}

// header reads an array or bulk header line of the command stream.
func (w *commands) header() {
	n, ok := parseLen(w.line[min(1, len(w.line)):])
	switch {
	case !ok || len(w.line) == 0:
		w.pending = append(w.pending, expect{}) // not a command lockctl writes: expect anything
	case w.line[0] == '*':
		w.args, w.arg, w.name = int(n), 0, w.name[:0]
		if w.args <= 0 {
			w.pending = append(w.pending, expect{})
		}
	case w.line[0] == '$' && n >= 0:
		w.skip, w.payload = int(n)+2, w.payload[:0]
	}
}

// endArg ends a bulk string; after the last one the command is queued.
func (w *commands) endArg() {
	if w.arg < 2 {
		w.name = append(w.name, strings.ToUpper(strings.TrimSuffix(string(w.payload), "\r\n")))
	}
	w.arg++
	if w.arg < w.args {
		return
	}
	name := w.name[0]
	if len(w.name) > 1 {
		if _, found := replyTypes[name+" "+w.name[1]]; found {
			name += " " + w.name[1]
		}
	}
	w.pending = append(w.pending, expect{name: name, types: replyTypes[name]})
}

// matchReply checks the header h of a reply that starts at the top level
// against the command it answers, first in first out. A push (out of band)
// or an attribute (before the reply) answers none.
func (c *conn) matchReply(h []byte) error {
	switch h[0] {
	case '>', '|':
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sent.pending) == 0 {
		return &ReplyError{Header: string(bytes.TrimSuffix(h, []byte("\r"))), Unsolicited: true}
	}
	want := c.sent.pending[0]
	c.sent.pending = c.sent.pending[1:]
	null := bytes.Equal(h, []byte("$-1\r")) || bytes.Equal(h, []byte("*-1\r"))
	if want.types == "" || null || bytes.IndexByte([]byte("-!_"+want.types), h[0]) >= 0 {
		return nil
	}
	return &ReplyError{Header: string(bytes.TrimSuffix(h, []byte("\r"))), Command: want.name}
}
