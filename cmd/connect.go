package cmd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/respguard"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/viper"
)

// connSettings are the connection settings of one invocation, read from the
// redis.* configuration keys (flags, LOCKCTL_REDIS_* env, config file).
type connSettings struct {
	URL string
	// Password is redis.password (LOCKCTL_REDIS_PASSWORD), used when the URL
	// has none; CLIAuth (REDISCLI_AUTH) comes after it.
	Password, CLIAuth string
	// SentinelAddrs and MasterName are --sentinel and --master-name.
	SentinelAddrs []string
	MasterName    string
	// SentinelPassword authenticates to the sentinels themselves
	// (redis.sentinel_password); most deployments leave it empty.
	SentinelPassword string
	// Cluster is --cluster: the URL's addresses are cluster seed nodes.
	Cluster bool
	// TLS files (PEM) and --tls-insecure; they need a rediss URL.
	TLSCA, TLSCert, TLSKey string
	TLSInsecure            bool
	Timeout                time.Duration
}

// connURLForms is the one-line list of accepted URL forms for errors
// (docs/connecting.md).
const connURLForms = "redis://[user[:password]@]host[:port][/db], rediss://... for TLS, " +
	"redis+sentinel://[user[:password]@]host:port[,host:port...]/master[/db], " +
	"redis+cluster://[user[:password]@]host:port[,host:port...], " +
	"redis+redlock://[user[:password]@]host:port,host:port,host:port[,...][/db] (inspect and watch)"

// connSettings reads the connection settings from f's configuration.
func (f *Factory) connSettings() (connSettings, error) {
	// Before a password from the environment can go to an address the
	// file chose.
	if err := f.requireTrust("redis."); err != nil {
		return connSettings{}, err
	}
	v := f.Config
	timeout, err := f.durationSetting(keyRedisTimeout, "timeout")
	if err != nil {
		return connSettings{}, err
	}
	return connSettings{
		URL:              v.GetString(keyRedisURL),
		Password:         v.GetString(keyRedisPassword),
		CLIAuth:          f.IO.getenv(redisCLIAuth),
		SentinelAddrs:    listSetting(v, keyRedisSentinel),
		MasterName:       v.GetString(keyRedisMasterName),
		SentinelPassword: v.GetString(keyRedisSentinelPassword),
		Cluster:          v.GetBool(keyRedisCluster),
		TLSCA:            v.GetString(keyRedisTLSCA),
		TLSCert:          v.GetString(keyRedisTLSCert),
		TLSKey:           v.GetString(keyRedisTLSKey),
		TLSInsecure:      v.GetBool(keyRedisTLSInsecure),
		Timeout:          timeout,
	}, nil
}

// listSetting reads a list written either as "a,b" (flag, env) or as a YAML
// sequence (config file).
func listSetting(v *viper.Viper, key string) []string {
	var raw []string
	switch x := v.Get(key).(type) {
	case []any:
		for _, e := range x {
			raw = append(raw, fmt.Sprint(e))
		}
	case []string:
		raw = x
	default:
		raw = strings.Split(v.GetString(key), ",")
	}
	var out []string
	for _, s := range raw {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// urlSecrets returns the passwords written in a Redis URL (userinfo, and the
// password= and sentinel_password= query options go-redis accepts), raw and
// percent-decoded, so they can be scrubbed from any error that quotes the
// URL, even one that does not parse. A userinfo without a colon counts as a
// password: go-redis reads redis://pw@host as a user, but redis-cli as a
// password, and users write it from habit.
func urlSecrets(raw string) []string {
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		out = append(out, s)
		if d, err := url.PathUnescape(s); err == nil && d != s {
			out = append(out, d)
		}
	}
	c := parseURLCredentials(raw)
	if c.hasColon {
		add(c.password)
	} else {
		add(c.user)
	}
	for _, v := range c.params {
		add(v)
	}
	return out
}

// urlCredentials is what a Redis URL's text carries that may be secret.
type urlCredentials struct {
	user, password string
	// hasColon: the userinfo has a password part (user:pw@, :pw@).
	hasColon bool
	// params are the values of its password= and sentinel_password= options.
	params []string
}

// parseURLCredentials reads raw as text, so a URL that does not parse, or
// has no scheme (user:pw@host:port), is read too, as RedactURL does.
func parseURLCredentials(raw string) urlCredentials {
	var c urlCredentials
	rest := raw
	if _, r, ok := strings.Cut(raw, "://"); ok {
		rest = r
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		c.user, c.password, c.hasColon = strings.Cut(rest[:at], ":")
	}
	if _, q, ok := strings.Cut(raw, "?"); ok {
		for _, kv := range strings.Split(q, "&") {
			if k, val, _ := strings.Cut(kv, "="); secretParam(k) {
				c.params = append(c.params, val)
			}
		}
	}
	return c
}

func secretParam(name string) bool { return name == "password" || name == "sentinel_password" }

// urlHasPassword reports whether a Redis URL carries a password as lockctl
// reads it (redisOptions): after the colon of the userinfo, or in a
// password= or sentinel_password= query option. A userinfo without a colon
// is a user name to go-redis, so redis://app@host has none.
func urlHasPassword(raw string) bool {
	c := parseURLCredentials(raw)
	if c.hasColon && c.password != "" {
		return true
	}
	for _, v := range c.params {
		if v != "" {
			return true
		}
	}
	return false
}

// RedactURL replaces the password of a Redis URL (userinfo and the password=
// and sentinel_password= query options) with ***, and a userinfo without a
// colon (redis-cli reads redis://pw@host as a password). It works on text,
// so a URL that does not parse, or has no scheme (user:pw@host:port), is
// redacted too.
func RedactURL(raw string) string {
	s := raw
	prefix, rest := "", s
	if scheme, r, ok := strings.Cut(s, "://"); ok {
		prefix, rest = scheme+"://", r
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if user, _, has := strings.Cut(rest[:at], ":"); has {
			s = prefix + user + ":***" + rest[at:]
		} else {
			s = prefix + "***" + rest[at:]
		}
	}
	base, q, ok := strings.Cut(s, "?")
	if !ok {
		return s
	}
	parts := strings.Split(q, "&")
	for i, kv := range parts {
		if k, _, _ := strings.Cut(kv, "="); secretParam(k) {
			parts[i] = k + "=***"
		}
	}
	return base + "?" + strings.Join(parts, "&")
}

// redisOptions turns the settings into go-redis options: a standalone
// client, a Sentinel-backed failover client or a cluster client, all behind
// redis.UniversalClient. URLs are parsed by go-redis (ParseURL,
// ParseFailoverURL, ParseClusterURL); redis+sentinel:// and redis+cluster://
// are lockctl's multi-host spellings of the last two. Errors name the
// (redacted) value and what is accepted; the caller scrubs secrets.
func redisOptions(s connSettings) (*redis.UniversalOptions, error) {
	shown := RedactURL(s.URL)
	uo, err := urlOptions(s.URL, s.Cluster)
	if err != nil && shown != s.URL {
		// A parser's reason may quote any part of the URL, the password
		// included: a / ? # or space in it ends the userinfo early
		// ("invalid port \":pa\" after host"). Give what the URL with its
		// password masked gives; if that parses, the password is at fault.
		if _, rerr := urlOptions(shown, s.Cluster); rerr != nil {
			return nil, rerr
		}
		return nil, fmt.Errorf("redis URL %q: the user or password holds a character that must be percent-encoded (/ as %%2F, ? as %%3F, # as %%23, %% as %%25, a space as %%20)", shown)
	}
	if err != nil {
		return nil, err
	}

	if len(s.SentinelAddrs) > 0 {
		if uo.IsClusterMode {
			return nil, fmt.Errorf("--sentinel and a cluster connection (%s) cannot be combined", shown)
		}
		if s.MasterName == "" {
			return nil, fmt.Errorf("--sentinel %s needs --master-name, the name the sentinels monitor the primary under", strings.Join(s.SentinelAddrs, ","))
		}
		for _, a := range s.SentinelAddrs {
			if strings.ContainsAny(a, "@/") { // a URL, perhaps with a password: shown redacted
				return nil, fmt.Errorf("--sentinel address %q is not host:port (the sentinels' password goes in LOCKCTL_REDIS_SENTINEL_PASSWORD or redis.sentinel_password)", RedactURL(a))
			}
			h, p, err := net.SplitHostPort(a)
			if err != nil || h == "" || p == "" {
				return nil, fmt.Errorf("--sentinel address %q is not host:port", a)
			}
			if !validPort(p) {
				// Else the dial fails (exit 3), quoting it: "unknown port".
				return nil, fmt.Errorf("--sentinel address %q: port %q is not a number from 1 to 65535", RedactURL(a), RedactURL(p))
			}
		}
		// The URL still gives the primary's credentials, database and TLS.
		uo.Addrs, uo.MasterName = s.SentinelAddrs, s.MasterName
	} else if s.MasterName != "" && uo.MasterName == "" {
		return nil, fmt.Errorf("--master-name %s needs --sentinel host:port[,host:port...] (or a redis+sentinel:// URL)", s.MasterName)
	}
	if s.Cluster && uo.MasterName != "" {
		return nil, fmt.Errorf("--cluster and a sentinel connection cannot be combined")
	}
	if uo.MasterName != "" && s.SentinelPassword != "" {
		uo.SentinelPassword = s.SentinelPassword
	}

	if uo.Password == "" {
		uo.Password = s.Password
	}
	if uo.Password == "" {
		uo.Password = s.CLIAuth
	}
	if err := applyTLS(uo, s, shown); err != nil {
		return nil, err
	}
	uo.DialTimeout, uo.ReadTimeout, uo.WriteTimeout = s.Timeout, s.Timeout, s.Timeout
	// A call's context deadline cuts its read too (the earlier of it and
	// ReadTimeout): a command's whole wait can then be one --timeout.
	uo.ContextTimeoutEnabled = true
	// A reply header announcing billions of elements fails the read (exit 3) instead of an out-of-memory crash in go-redis.
	uo.Dialer = respguard.Dialer(s.Timeout, uo.TLSConfig)
	uo.MaxRetries = -1   // a timed-out call is reported, not silently repeated
	uo.DialerRetries = 1 // nor a refused dial: five tries 100ms apart outlast a short --timeout, which then hides the refusal
	uo.DisableIdentity = true
	return uo, nil
}

// urlOptions parses a Redis URL (docs/connecting.md) into
// client options; errors quote it redacted (RedactURL) and say what is
// accepted. cluster is --cluster: a redis:// URL names cluster seed nodes.
func urlOptions(raw string, cluster bool) (*redis.UniversalOptions, error) {
	shown := RedactURL(raw)
	if !strings.Contains(raw, "://") {
		// host:port as redis-cli -h/-p users type it: url.Parse reads the
		// host as a scheme, or fails on the colon.
		return nil, fmt.Errorf("redis URL %q has no scheme; did you mean \"redis://%s\"? accepted: %s", shown, shown, connURLForms)
	}
	parse, hosts := raw, ""
	scheme, _, _ := strings.Cut(strings.ToLower(raw), "://")
	multi := strings.HasSuffix(scheme, "+sentinel") || strings.HasSuffix(scheme, "+cluster") || strings.HasSuffix(scheme, "+redlock")
	if multi {
		// url.Parse reads the host list as one host, and refuses it when
		// one is an IPv6 literal ([::1]:26379,[::2]:26379): parse the URL
		// with one placeholder host, then put the list back.
		parse, hosts = cutHosts(raw)
	}
	u, err := url.Parse(parse)
	if err != nil {
		return nil, fmt.Errorf("redis URL %q does not parse: %v; accepted: %s", shown, urlErrorReason(err), connURLForms)
	}
	if multi {
		for i, h := range strings.Split(hosts, ",") {
			if h == "" && !strings.Contains(hosts, ",") {
				// go-redis would dial localhost:6379, a sentinel's port too.
				return nil, fmt.Errorf("redis URL %q names no host; accepted: %s", shown, connURLForms)
			}
			if h == "" {
				return nil, fmt.Errorf("redis URL %q: host %d of the list is empty; accepted: %s", shown, i+1, connURLForms)
			}
			hu, err := url.Parse("redis://" + h)
			if err != nil {
				return nil, fmt.Errorf("redis URL %q: host %q does not parse: %v; accepted: %s", shown, h, urlErrorReason(err), connURLForms)
			}
			if hu.Port() == "" {
				// go-redis gives the first host 6379, a data port and no
				// sentinel's, and refuses any other ("unable to parse addr param").
				return nil, fmt.Errorf("redis URL %q: host %q has no port; each host of the list is host:port; accepted: %s", shown, h, connURLForms)
			}
		}
		u.Host = hosts
	}
	if strings.Contains(raw, "#") {
		// go-redis ignores a fragment: redis://:12#34@host would dial port 12.
		return nil, fmt.Errorf("redis URL %q has a #, which no Redis URL has (write one in a password as %%23); accepted: %s", shown, connURLForms)
	}
	for _, o := range overriddenURLOptions {
		if u.Query().Has(o.name) {
			return nil, fmt.Errorf("redis URL %q: option %s would be ignored: %s", shown, o.name, o.instead)
		}
	}
	var uo *redis.UniversalOptions
	switch u.Scheme {
	case "redis+sentinel", "rediss+sentinel":
		uo, err = sentinelURLOptions(u)
	case "redis+cluster", "rediss+cluster":
		uo, err = clusterURLOptions(u, true)
	case "redis+redlock", "rediss+redlock": // Factory.Redlock reads these; other commands need one lock service
		return nil, fmt.Errorf("redis URL %q names independent Redlock nodes: only inspect and watch read them; this command needs one server, a Sentinel primary or a cluster", shown)
	case "redis", "rediss":
		switch {
		case u.Query().Has("master_name"):
			// go-redis' own form: the userinfo authenticates to the sentinels.
			var fo *redis.FailoverOptions
			if fo, err = redis.ParseFailoverURL(raw); err == nil {
				uo = &redis.UniversalOptions{Addrs: fo.SentinelAddrs, MasterName: fo.MasterName, DB: fo.DB,
					Username: fo.Username, Password: fo.Password, SentinelUsername: fo.SentinelUsername,
					SentinelPassword: fo.SentinelPassword, TLSConfig: fo.TLSConfig}
			}
		case cluster:
			uo, err = clusterURLOptions(u, false)
		default:
			var o *redis.Options
			if o, err = redis.ParseURL(raw); err == nil {
				uo = &redis.UniversalOptions{Addrs: []string{o.Addr}, DB: o.DB, Username: o.Username,
					Password: o.Password, TLSConfig: o.TLSConfig}
			}
		}
	default:
		return nil, fmt.Errorf("redis URL %q: unknown scheme %q; accepted: %s", shown, u.Scheme, connURLForms)
	}
	if err != nil {
		return nil, fmt.Errorf("redis URL %q: %s; accepted: %s", shown, strings.TrimPrefix(err.Error(), "redis: "), connURLForms)
	}
	// Checks go-redis leaves to the dial: a port in 1..65535, and a database
	// number that is not negative (go-redis reads -1 as 0).
	for _, a := range uo.Addrs {
		if _, p, err := net.SplitHostPort(a); err == nil {
			if !validPort(p) {
				return nil, fmt.Errorf("redis URL %q: port %q is not a number from 1 to 65535", shown, p)
			}
		}
	}
	if uo.DB < 0 {
		return nil, fmt.Errorf("redis URL %q: database number %d is negative", shown, uo.DB)
	}
	return uo, nil
}

// validPort reports whether p is a TCP port number, 1 to 65535.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// overriddenURLOptions are the go-redis URL options (redis.ParseURL) that
// lockctl sets itself on every connection (redisOptions): given in the URL
// they would be overridden without a word.
var overriddenURLOptions = []struct{ name, instead string }{
	{"dial_timeout", "--timeout (redis.timeout) bounds the dial and each call"},
	{"read_timeout", "--timeout (redis.timeout) bounds the dial and each call"},
	{"write_timeout", "--timeout (redis.timeout) bounds the dial and each call"},
	{"max_retries", "lockctl makes each call once and reports a failure"},
	{"skip_verify", "use --tls-insecure (redis.tls_insecure)"},
}

// cutHosts splits a multi-host URL into the URL with the placeholder host
// "hosts" and its host list as written.
func cutHosts(raw string) (string, string) {
	scheme, rest, _ := strings.Cut(raw, "://")
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	start := strings.LastIndex(rest[:end], "@") + 1
	return scheme + "://" + rest[:start] + "hosts" + rest[end:], rest[start:end]
}

func urlErrorReason(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

// sentinelURLOptions parses redis+sentinel://[user[:password]@]host:port[,host:port...]/master[/db][?options]:
// it is rewritten into go-redis' failover form (first host, addr= for the
// others, master_name=) and parsed by redis.ParseFailoverURL. Unlike that
// form, the userinfo here authenticates to the primary, as in every other
// lockctl URL; the sentinels' own password is redis.sentinel_password.
func sentinelURLOptions(u *url.URL) (*redis.UniversalOptions, error) {
	hosts := strings.Split(u.Host, ",")
	path := strings.Split(strings.Trim(u.Path, "/"), "/")
	if path[0] == "" || len(path) > 2 {
		return nil, fmt.Errorf("the path must be /<master name>[/<db>], not %q", u.Path)
	}
	q := u.Query()
	q.Set("master_name", path[0])
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	r := url.URL{Scheme: strings.TrimSuffix(u.Scheme, "+sentinel"), User: u.User, Host: hosts[0], RawQuery: q.Encode()}
	if len(path) == 2 {
		r.Path = "/" + path[1]
	}
	fo, err := redis.ParseFailoverURL(r.String())
	if err != nil {
		return nil, err
	}
	return &redis.UniversalOptions{Addrs: fo.SentinelAddrs, MasterName: fo.MasterName, DB: fo.DB,
		Username: fo.SentinelUsername, Password: fo.SentinelPassword, TLSConfig: fo.TLSConfig}, nil
}

// clusterURLOptions parses redis+cluster://[user[:password]@]host:port[,host:port...][?options]
// (multi) or a redis:// URL given with --cluster, through
// redis.ParseClusterURL. A cluster has only database 0.
func clusterURLOptions(u *url.URL, multi bool) (*redis.UniversalOptions, error) {
	if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
		return nil, fmt.Errorf("a Redis Cluster has only database 0, not %q", p)
	}
	r := *u
	r.Path = ""
	if multi {
		hosts := strings.Split(u.Host, ",")
		q := u.Query()
		for _, h := range hosts[1:] {
			q.Add("addr", h)
		}
		r.Scheme, r.Host, r.RawQuery = strings.TrimSuffix(u.Scheme, "+cluster"), hosts[0], q.Encode()
	}
	co, err := redis.ParseClusterURL(r.String())
	if err != nil {
		return nil, err
	}
	return &redis.UniversalOptions{Addrs: co.Addrs, IsClusterMode: true, Username: co.Username,
		Password: co.Password, TLSConfig: co.TLSConfig}, nil
}

// applyTLS adds --tls-ca, --tls-cert/--tls-key and --tls-insecure to a
// rediss connection. Certificate verification is on unless --tls-insecure.
func applyTLS(uo *redis.UniversalOptions, s connSettings, shown string) error {
	asked := s.TLSCA != "" || s.TLSCert != "" || s.TLSKey != "" || s.TLSInsecure
	if uo.TLSConfig == nil {
		if asked {
			return fmt.Errorf("TLS settings (--tls-ca, --tls-cert, --tls-key, --tls-insecure) need a rediss:// URL, not %q", shown)
		}
		return nil
	}
	if s.TLSCA != "" {
		pem, err := readInputFile("--tls-ca", s.TLSCA, maxInputFile)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls-ca %q holds no PEM certificate", s.TLSCA)
		}
		uo.TLSConfig.RootCAs = pool
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together (got cert %q, key %q)", s.TLSCert, s.TLSKey)
	}
	if s.TLSCert != "" {
		certPEM, err := readInputFile("--tls-cert", s.TLSCert, maxInputFile)
		if err != nil {
			return err
		}
		keyPEM, err := readInputFile("--tls-key", s.TLSKey, maxInputFile)
		if err != nil {
			return err
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return fmt.Errorf("--tls-cert %q / --tls-key %q: %v", s.TLSCert, s.TLSKey, err)
		}
		uo.TLSConfig.Certificates = []tls.Certificate{pair}
	}
	uo.TLSConfig.InsecureSkipVerify = s.TLSInsecure
	if uo.IsClusterMode || uo.MasterName != "" {
		// go-redis' parsers name the first host; each cluster node or the
		// primary a sentinel names must be verified as itself (an empty
		// ServerName makes tls.DialWithDialer use the dialled host).
		uo.TLSConfig.ServerName = ""
	}
	if uo.TLSConfig.MinVersion == 0 {
		uo.TLSConfig.MinVersion = tls.VersionTLS12
	}
	return nil
}

// quietRedisLogs silences go-redis' internal logger once per process: its
// retry and sentinel chatter would go to stderr next to our one-line errors.
var quietRedisLogs sync.Once

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}
