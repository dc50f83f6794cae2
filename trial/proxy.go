package trial

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// proxy is one worker's loopback door to Redis: the partition nemesis
// stalls it, and the commands passing through it tell which worker wrote
// a lock's owner token. Shopify's toxiproxy does the stalling too, but
// embedding it brings an HTTP API, Prometheus and zerolog into lockctl's
// go.mod for one toxic of a few dozen lines.
type proxy struct {
	worker   int
	ln       net.Listener
	upstream string
	auth     []string // sent on each upstream connection first (Options.UpstreamAuth)
	// observe gets each command the worker sends (RESP arrays of bulk
	// strings, or an inline command), parsed from a copy of its bytes.
	observe func(worker int, args []string)

	mu         sync.Mutex
	stallUntil time.Time
	conns      map[net.Conn]struct{}
	closed     chan struct{}
	wg         sync.WaitGroup
}

// newProxy listens on a free 127.0.0.1 port and forwards each connection to
// upstream (host:port), authenticated with auth (nil: not).
func newProxy(worker int, upstream string, auth []string, observe func(int, []string)) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{worker: worker, ln: ln, upstream: upstream, auth: auth, observe: observe, conns: map[net.Conn]struct{}{}, closed: make(chan struct{})}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// addr is the proxy's host:port.
func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.handle(c)
	}
}

func (p *proxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.closed:
		return false
	default:
	}
	if on {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *proxy) handle(client net.Conn) {
	defer p.wg.Done()
	defer client.Close()
	if !p.gate() {
		return
	}
	server, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		return
	}
	defer server.Close()
	if err := p.authenticate(server); err != nil {
		return
	}
	if !p.track(client, true) || !p.track(server, true) {
		return
	}
	defer p.track(client, false)
	defer p.track(server, false)
	pr, pw := io.Pipe()
	go p.parse(pr)
	done := make(chan struct{}, 2)
	go func() { p.pump(server, client, pw); _ = pw.Close(); done <- struct{}{} }()
	go func() { p.pump(client, server, nil); done <- struct{}{} }()
	<-done
	_ = client.Close()
	_ = server.Close()
	<-done
}

// authenticate sends p.auth on a new upstream connection and reads its
// one-line reply within 5s; an error reply or none is an error.
func (p *proxy) authenticate(server net.Conn) error {
	if len(p.auth) == 0 {
		return nil
	}
	cmd := fmt.Sprintf("*%d\r\n", len(p.auth))
	for _, a := range p.auth {
		cmd += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	_ = server.SetDeadline(time.Now().Add(5 * time.Second))
	defer server.SetDeadline(time.Time{})
	if _, err := io.WriteString(server, cmd); err != nil {
		return err
	}
	// Byte by byte: nothing past the reply may be taken from the worker's stream.
	var line []byte
	b := make([]byte, 1)
	for len(line) < 1024 {
		if _, err := server.Read(b); err != nil {
			return err
		}
		line = append(line, b[0])
		if b[0] == '\n' {
			break
		}
	}
	if !bytes.HasPrefix(line, []byte("+")) {
		return errors.New("upstream AUTH refused")
	}
	return nil
}

// pump copies src to dst, holding each chunk while the proxy is stalled;
// tee, when set, gets a copy of what was forwarded.
func (p *proxy) pump(dst, src net.Conn, tee io.Writer) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
				return
			}
			// The copy goes first, so that the owner token of a SET is known
			// by the time the sampler can see the key.
			if tee != nil {
				_, _ = tee.Write(buf[:n])
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// parse reads the worker's commands from r for observe; on bytes it cannot
// parse it drains r, so that the forwarding never waits on it.
func (p *proxy) parse(r *io.PipeReader) {
	br := bufio.NewReader(r)
	for {
		args, err := readCommand(br)
		if err != nil {
			_, _ = io.Copy(io.Discard, br)
			return
		}
		if len(args) > 0 && p.observe != nil {
			p.observe(p.worker, args)
		}
	}
}

// gate waits while the proxy is stalled; false once it is closed.
func (p *proxy) gate() bool {
	for {
		p.mu.Lock()
		wait := time.Until(p.stallUntil)
		p.mu.Unlock()
		if wait <= 0 {
			select {
			case <-p.closed:
				return false
			default:
				return true
			}
		}
		select {
		case <-p.closed:
			return false
		case <-time.After(wait):
		}
	}
}

// stall holds the worker's Redis traffic, both ways, for d: its commands
// and the replies wait, its connections stay open.
func (p *proxy) stall(d time.Duration) {
	p.mu.Lock()
	p.stallUntil = time.Now().Add(d)
	p.mu.Unlock()
}

// heal ends a stall early (Ctrl-C stops faults first).
func (p *proxy) heal() {
	p.mu.Lock()
	p.stallUntil = time.Time{}
	p.mu.Unlock()
}

// close stops listening, drops every connection and waits for its goroutines.
func (p *proxy) close() {
	p.mu.Lock()
	select {
	case <-p.closed:
	default:
		close(p.closed)
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}
