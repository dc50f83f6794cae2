package cmd

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// Redlock node counts a redis+redlock:// URL may name (docs/redlock.md):
// fewer than 3 has no majority that survives a node, more than 9 is no
// deployment the Redlock implementations document.
const (
	redlockMinNodes = 3
	redlockMaxNodes = 9
)

// redlockForm is the accepted form, for errors.
const redlockForm = "redis+redlock://[user[:password]@]host:port,host:port,host:port[,...][/db] (3 to 9 nodes; rediss+redlock:// for TLS)"

// isRedlockURL reports whether raw is a redis+redlock:// or rediss+redlock:// URL.
func isRedlockURL(raw string) bool {
	scheme, _, ok := strings.Cut(strings.ToLower(raw), "://")
	return ok && (scheme == "redis+redlock" || scheme == "rediss+redlock")
}

// redlockNodeURLs splits a redis+redlock:// URL into one redis:// (or
// rediss://) URL per node, with the same credentials, database and options,
// and the nodes' host:port as written. Errors quote the URL redacted and
// say what is accepted: a host without a port, fewer than 3 or more than 9
// nodes, a node named twice.
func redlockNodeURLs(raw string) (urls, addrs []string, err error) {
	shown := RedactURL(raw)
	parse, hosts := cutHosts(raw)
	u, err := url.Parse(parse)
	if err != nil {
		return nil, nil, fmt.Errorf("redis URL %q does not parse: %v; accepted: %s", shown, urlErrorReason(err), redlockForm)
	}
	seen := map[string]int{}
	for i, h := range strings.Split(hosts, ",") {
		hu, err := url.Parse("redis://" + h)
		if h == "" || err != nil || hu.Port() == "" {
			return nil, nil, fmt.Errorf("redis URL %q: node %d %q is not host:port; accepted: %s", shown, i+1, h, redlockForm)
		}
		key := nodeIdentity(hu.Hostname(), hu.Port())
		if first, dup := seen[key]; dup {
			return nil, nil, fmt.Errorf("redis URL %q: node %s is named twice (nodes %d and %d); each Redlock node must be a different server", shown, h, first, i+1)
		}
		seen[key] = i + 1
		addrs = append(addrs, h)
	}
	if n := len(addrs); n < redlockMinNodes || n > redlockMaxNodes {
		return nil, nil, fmt.Errorf("redis URL %q names %d nodes; Redlock needs %d to %d independent nodes (odd counts: 3, 5, 7, 9); accepted: %s", shown, n, redlockMinNodes, redlockMaxNodes, redlockForm)
	}
	for _, h := range addrs {
		nu := *u
		nu.Scheme, nu.Host = strings.TrimSuffix(strings.ToLower(u.Scheme), "+redlock"), h
		urls = append(urls, nu.String())
	}
	return urls, addrs, nil
}

// nodeIdentity is the form two spellings of one node share, so that it is
// not counted twice: the host in lower case without a trailing dot (an IP
// address in its canonical form) and the port as a number ("06379" is 6379).
func nodeIdentity(host, port string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().WithZone("").String()
	}
	if n, err := strconv.Atoi(port); err == nil {
		port = strconv.Itoa(n)
	}
	return net.JoinHostPort(host, port)
}

// RedlockConn is a connection to every node of a Redlock deployment.
type RedlockConn struct {
	Nodes []inspect.Node
	// URL is the redacted URL, safe to print.
	URL     string
	Timeout time.Duration
	clients []*redis.Client
	scrub   func(string) string
}

// errText is err on one line with the connection's secrets masked.
func (c *RedlockConn) errText(err error) string {
	return (&RedisConn{scrub: c.scrub}).errLine(err)
}

// Close closes every node's client.
func (c *RedlockConn) Close() error {
	for _, cl := range c.clients {
		_ = cl.Close()
	}
	return nil
}

// redlockConfigured reports whether the configured URL is a redis+redlock:// one.
func (f *Factory) redlockConfigured() bool {
	return isRedlockURL(f.Config.GetString(keyRedisURL))
}

// redlockOptions checks the settings of a redis+redlock:// URL without
// connecting and returns each node's client options, its address and the
// redacted URL, or the exit-2 error (secrets scrubbed).
func (f *Factory) redlockOptions() ([]*redis.Options, []string, connSettings, error) {
	s, err := f.connSettings()
	if err != nil {
		return nil, nil, s, err
	}
	f.secrets = append(f.secrets, urlSecrets(s.URL)...)
	f.secrets = append(f.secrets, s.Password, os.Getenv(redisCLIAuth))
	if s.Cluster || len(s.SentinelAddrs) > 0 || s.MasterName != "" {
		return nil, nil, s, usageErrorf("a redis+redlock:// URL names independent servers: it cannot be combined with --cluster, --sentinel or --master-name")
	}
	urls, addrs, err := redlockNodeURLs(s.URL)
	if err != nil {
		return nil, nil, s, usageErrorf("%s", f.scrub(err.Error()))
	}
	opts := make([]*redis.Options, len(urls))
	for i, nu := range urls {
		ns := s
		ns.URL = nu
		opt, err := redisOptions(ns)
		if err != nil {
			return nil, nil, s, usageErrorf("%s", f.scrub(strings.Replace(err.Error(), RedactURL(nu), RedactURL(s.URL), 1)))
		}
		opts[i] = opt.Simple()
	}
	return opts, addrs, s, nil
}

// checkConnSettings checks the connection settings as the commands that
// connect would (config view): a redis+redlock:// URL as inspect reads it,
// any other as Redis does.
func (f *Factory) checkConnSettings() error {
	if f.redlockConfigured() {
		_, _, _, err := f.redlockOptions()
		return err
	}
	_, _, _, err := f.redisSettings()
	return err
}

// Redlock connects to every node of a redis+redlock:// URL (docs/redlock.md)
// with the usual settings (password from the URL, redis.password, then
// REDISCLI_AUTH; TLS for rediss+redlock://; --timeout) and PINGs them all at
// once. A node that does not answer is kept: inspect and watch show it as
// unreachable. Bad settings are exit 2; no node answering is exit 3. An even
// node count gets one note on stderr.
func (f *Factory) Redlock(ctx context.Context) (*RedlockConn, error) {
	opts, addrs, s, err := f.redlockOptions()
	if err != nil {
		return nil, err
	}
	conn := &RedlockConn{URL: RedactURL(s.URL), Timeout: s.Timeout, scrub: f.scrub}
	for i, o := range opts {
		cl := redis.NewClient(o)
		conn.clients = append(conn.clients, cl)
		conn.Nodes = append(conn.Nodes, inspect.Node{Addr: addrs[i], Client: cl})
	}
	if n := len(addrs); n%2 == 0 {
		fmt.Fprintf(f.IO.ErrOut, "lockctl: note: %d Redlock nodes need %d for a majority and survive %d down, as %d nodes would; an odd count (%d) survives one more\n",
			n, inspect.Majority(n), n-inspect.Majority(n), n-1, n+1)
	}
	if err := conn.pingAll(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	f.warnPasswordFlag()
	return conn, nil
}

// pingAll PINGs every node at once within the timeout; it fails only when
// no node answers: exit 2 when a node refused the database number, else
// exit 3 naming the first node's error.
func (c *RedlockConn) pingAll(ctx context.Context) error {
	errs := make([]error, len(c.clients))
	var wg sync.WaitGroup
	for i, cl := range c.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, c.Timeout)
			defer cancel()
			errs[i] = cl.Ping(pctx).Err()
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for _, err := range errs {
		if err == nil {
			return c.sameServer(ctx, errs)
		}
	}
	for i, err := range errs {
		if strings.Contains(err.Error(), "DB index is out of range") { // SELECT: the setting, not the servers
			return usageErrorf("redis %s: node %s: database %d is out of range on this server (its databases setting, 16 by default, numbers them from 0)", c.URL, c.Nodes[i].Addr, c.clients[i].Options().DB)
		}
	}
	return redisError(c.URL, fmt.Errorf("no node answered; node %s: %s", c.Nodes[0].Addr, c.errText(errs[0])))
}

// sameServer reads INFO server's run_id on every node that answered the
// PING (pingErrs nil) and refuses, exit 2, two nodes with one run_id: one
// server under two names (localhost and 127.0.0.1, two ports of one
// redis-server) makes a false majority. A node whose INFO fails (an ACL
// without it) is not compared.
func (c *RedlockConn) sameServer(ctx context.Context, pingErrs []error) error {
	ids := make([]string, len(c.clients))
	var wg sync.WaitGroup
	for i, cl := range c.clients {
		if pingErrs[i] != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ictx, cancel := context.WithTimeout(ctx, c.Timeout)
			defer cancel()
			if info, err := cl.Info(ictx, "server").Result(); err == nil {
				ids[i] = infoField(info, "run_id")
			}
		}()
	}
	wg.Wait()
	first := map[string]int{}
	for i, id := range ids {
		if id == "" {
			continue
		}
		if j, dup := first[id]; dup {
			return usageErrorf("redis %s: nodes %d (%s) and %d (%s) are one server (run_id %s); each Redlock node must be a different server", c.URL, j+1, c.Nodes[j].Addr, i+1, c.Nodes[i].Addr, id)
		}
		first[id] = i
	}
	return nil
}

// infoField returns the value of name in an INFO reply ("name:value" lines), or "".
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// addRedlockLeaseFlag adds --lease to inspect or watch: the lease a Redlock
// client acquires with, for the drift allowance (docs/redlock.md).
func addRedlockLeaseFlag(cmd *cobra.Command, lease *string) {
	cmd.Flags().StringVar(lease, "lease", "", "over redis+redlock:// nodes: the lease the client acquires with (redsync WithExpiry, node-redlock's duration), for the drift allowance of 1% + 2ms (default: the largest TTL read)")
}

// redlockLease parses --lease: 0 when not given; exit 2 when it is no
// positive duration, or given without a redis+redlock:// URL.
func (f *Factory) redlockLease(lease string) (time.Duration, error) {
	if lease == "" {
		return 0, nil
	}
	if !f.redlockConfigured() {
		return 0, usageErrorf("--lease %s is the lease of a Redlock lock: it needs a redis+redlock:// URL", lease)
	}
	d, err := lockcore.ParsePositiveDuration(lease)
	if err != nil {
		return 0, usageErrorf("lease %s", err)
	}
	return d, nil
}
