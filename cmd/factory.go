package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

// Factory holds what commands share: streams, the configuration of this
// invocation and the Redis connection. Commands copy what they need into
// their options struct.
type Factory struct {
	IO *IOStreams
	// ConfigFile is the --config flag.
	ConfigFile string
	// Config is loaded for the command being run (see loadConfig).
	Config *viper.Viper
	// ConfigPath is the config file that was read, or "".
	ConfigPath string
	// configKeys are what the file sets (nil for no file), configData its
	// content and configOrigin where it was found (originFlag, ...).
	configKeys   *fileKeys
	configData   []byte
	configOrigin string
	// trusted caches a positive trust check (requireTrust); viewing is
	// config view, which shows an untrusted file's settings.
	trusted, viewing bool
	// cmd is the command being run (its flags are part of Config).
	cmd *cobra.Command
	// secrets are scrubbed from every error Execute prints.
	secrets []string
	// args are the arguments lockctl was run with (completion reads them).
	args []string
	// passwordWarned says warnPasswordFlag has run (or must not: completion).
	passwordWarned bool
	// handedOver says this is a companion run by lockctl's handOver, which
	// printed the config notices already.
	handedOver bool
}

// load reads the configuration for cmd; root's PersistentPreRunE calls it.
func (f *Factory) load(cmd *cobra.Command) error {
	v, file, err := loadConfig(cmd, f.ConfigFile, f.IO.getenv)
	if err != nil {
		return err
	}
	f.Config, f.ConfigPath, f.configKeys, f.configData, f.configOrigin, f.cmd = v, file.path, file.keys, file.data, file.origin, cmd
	f.configNotices()
	return nil
}

// Output returns the -o/--output format after checking it is one the
// command offers. A format set in LOCKCTL_OUTPUT or the config file is a
// preference, as the AWS CLI's output setting is: a command that does not
// offer it (output: markdown is for checklist) uses its default, table. A
// flag must name one of the command's formats, and a value that is no
// format of any command is refused wherever it comes from, named by its
// source (settingName).
func (f *Factory) Output(accepted ...string) (string, error) {
	o := f.Config.GetString(keyOutput)
	if slices.Contains(accepted, o) {
		return o, nil
	}
	if src := f.settingSource(f.cmd, keyOutput); (src == "env" || src == "file") && slices.Contains(allFormats, o) {
		return defaultFormat(accepted), nil
	}
	return "", usageErrorf("%s %q is not one of %s", f.settingName(keyOutput, "output"), o, strings.Join(accepted, ", "))
}

// defaultFormat is the format a command uses when none of its own is
// configured: table, or its first one.
func defaultFormat(accepted []string) string {
	if d, _ := configDefaults[keyOutput].(string); slices.Contains(accepted, d) {
		return d
	}
	return accepted[0]
}

// RedisConn is a connected client with the URL to show (password redacted).
type RedisConn struct {
	Client redis.UniversalClient
	// URL is the redacted URL, safe to print.
	URL string
	// Timeout bounds each Redis call.
	Timeout time.Duration
	// Cluster is true for a Redis Cluster client (*redis.ClusterClient):
	// the lock and fence keys must then share a hash slot (keysFor).
	Cluster bool
	// scrub masks the connection's secrets (Factory.scrub); nil masks none.
	scrub func(string) string
	// timeoutName names where Timeout came from (settingName; "" for --timeout).
	timeoutName string
}

// isTimeout reports whether err is a call that ran out of time: the
// context's deadline, or the client's read or dial timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// noAnswer is the exit-3 error of a server at url (redacted) that did not
// answer within timeout, named by where it came from (--timeout, a variable
// or the config file: settingName).
func noAnswer(url string, timeout time.Duration, name string) error {
	if name == "" {
		name = "--timeout"
	}
	return redisError(url, fmt.Errorf("no answer within %s (%s)", lockcore.FormatDuration(timeout), name))
}

// callError is err, from a call on c, as the exit-3 error every command
// gives: a call that timed out says "no answer within 5s (--timeout)", as
// the PING of Factory.Redis does. When ctx (the command's own, not the
// call's) has ended, its error is returned: Ctrl-C is not the server's fault.
func (c *RedisConn) callError(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case isTimeout(err):
		return noAnswer(c.URL, c.Timeout, c.timeoutName)
	}
	return redisError(c.URL, err)
}

// errLine is err on one line with the connection's secrets masked: for
// what a command prints while it runs (Execute masks the error it ends
// with). A server's or the client's error may quote what it was given.
func (c *RedisConn) errLine(err error) string {
	s := err.Error()
	if c.scrub != nil {
		s = c.scrub(s)
	}
	return oneLine(errors.New(s))
}

// Close closes the client.
func (c *RedisConn) Close() error { return c.Client.Close() }

// redisSettings checks the connection settings without connecting: the
// settings, the client options they give and the redacted name of the
// server, or the exit-2 error a command would give (passwords scrubbed).
// Redis uses it; so do run --dry-run and config view, which connect to
// nothing.
func (f *Factory) redisSettings() (connSettings, *redis.UniversalOptions, string, error) {
	s, err := f.connSettings()
	if err != nil {
		return s, nil, "", err
	}
	// Registered before parsing: a URL that does not parse is quoted in errors.
	f.secrets = append(f.secrets, urlSecrets(s.URL)...)
	for _, a := range s.SentinelAddrs { // a URL given as an address
		f.secrets = append(f.secrets, urlSecrets(a)...)
	}
	f.secrets = append(f.secrets, s.Password, s.SentinelPassword, s.CLIAuth)
	shown := RedactURL(s.URL)
	if len(s.SentinelAddrs) > 0 {
		shown = fmt.Sprintf("sentinel %s master %s", strings.Join(s.SentinelAddrs, ","), s.MasterName)
	}
	opt, err := redisOptions(s)
	if err != nil {
		return s, nil, "", usageErrorf("%s", f.scrub(err.Error()))
	}
	return s, opt, shown, nil
}

// Redis connects to the configured deployment and checks it answers PING:
// a standalone server, a Sentinel-managed primary (--sentinel and
// --master-name, or a redis+sentinel:// URL) or a cluster (--cluster or a
// redis+cluster:// URL), over TLS for rediss URLs (docs/connecting.md). A
// redis:// URL that names a cluster node connects to the whole cluster,
// with one line on stderr (docs/cluster.md). The password comes from the
// URL, else redis.password (LOCKCTL_REDIS_PASSWORD), else REDISCLI_AUTH.
// Bad settings are exit 2, connection failures exit 3; every message shows
// only the redacted URL and has every known password scrubbed.
func (f *Factory) Redis(ctx context.Context) (*RedisConn, error) {
	return f.connect(ctx, false)
}

// redisWithin is Redis for shell completion: ctx's deadline cuts every dial,
// read and write (go-redis ContextTimeoutEnabled, and the timeouts capped to
// what is left of it), and nothing is said on stderr.
func (f *Factory) redisWithin(ctx context.Context) (*RedisConn, error) {
	return f.connect(ctx, true)
}

func (f *Factory) connect(ctx context.Context, within bool) (*RedisConn, error) {
	s, opt, shown, err := f.redisSettings()
	if err != nil {
		return nil, err
	}
	if d, ok := ctx.Deadline(); ok && within {
		s.Timeout = min(s.Timeout, max(time.Until(d), time.Millisecond))
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = s.Timeout, s.Timeout, s.Timeout
	}
	// PING and the cluster probe wait one --timeout together, not one
	// each: a server slow to answer was waited on twice (issue 33).
	pctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	client, err := f.ping(ctx, pctx, s, opt, shown)
	if err != nil {
		return nil, err
	}
	_, cluster := client.(*redis.ClusterClient)
	if !cluster && opt.MasterName == "" {
		if clusterEnabled(pctx, client) {
			// A cluster node behind a redis:// URL would serve only its
			// own slots: a scan lists a third of the locks, a key
			// elsewhere is a MOVED (issue 19 §5). The cluster client,
			// seeded with that node, follows the whole cluster.
			_ = client.Close()
			opt.IsClusterMode = true
			if client, err = f.ping(ctx, pctx, s, opt, shown); err != nil {
				return nil, err
			}
			cluster = true
			if !within {
				fmt.Fprintf(f.IO.ErrOut, "lockctl: %s is a cluster node: using the cluster (redis+cluster:// says so up front)\n", opt.Addrs[0])
			}
		}
	}
	client.AddHook(clusterHook{addr: opt.Addrs[0], cluster: cluster})
	f.warnPasswordFlag() // after the PING: an error stays one line
	return &RedisConn{Client: client, URL: shown, Timeout: s.Timeout, Cluster: cluster, scrub: f.scrub,
		timeoutName: f.settingName(keyRedisTimeout, "--timeout")}, nil
}

// ping makes the client of opt and checks it answers PING by pctx's
// deadline (the connection's share of the timeout; ctx is the command's);
// on failure it closes the client and returns the exit-2 or exit-3 error
// that says why.
func (f *Factory) ping(ctx, pctx context.Context, s connSettings, opt *redis.UniversalOptions, shown string) (redis.UniversalClient, error) {
	client := redis.NewUniversalClient(opt)
	err := client.Ping(pctx).Err()
	if err == nil {
		return client, nil
	}
	_ = client.Close()
	if errors.Is(ctx.Err(), context.Canceled) { // Ctrl-C; a deadline is a Redis timeout
		return nil, ctx.Err()
	}
	if strings.Contains(err.Error(), "DB index is out of range") { // SELECT: the setting, not the server
		return nil, usageErrorf("redis %s: database %d is out of range on this server (its databases setting, 16 by default, numbers them from 0)", shown, opt.DB)
	}
	if r := clusterRefusal(err, opt.Addrs[0]); r != nil {
		return nil, redisError(shown, r)
	}
	if opt.IsClusterMode && strings.Contains(err.Error(), "cluster has no nodes") { // an empty CLUSTER SLOTS
		return nil, redisError(shown, noSlotsRefusal(opt.Addrs[0]))
	}
	if m := tlsMismatch(err, opt, s.Timeout, f.settingName(keyRedisTimeout, "--timeout")); ctx.Err() == nil && m != nil {
		return nil, redisError(shown, m)
	}
	// A server that accepts and never answers gives "i/o timeout", or
	// "context deadline exceeded" when stuck in a TLS handshake or
	// behind a sentinel: say which limit ran out. A deadline of the
	// caller's (watch --duration) is not the server's fault.
	if ctx.Err() == nil && isTimeout(err) {
		return nil, noAnswer(shown, s.Timeout, f.settingName(keyRedisTimeout, "--timeout"))
	}
	if opt.MasterName != "" && errors.Is(err, redis.Nil) { // GET-MASTER-ADDR-BY-NAME: the sentinel answered, but knows no such name
		return nil, redisError(shown, fmt.Errorf("the sentinels that answered monitor no primary named %q", opt.MasterName))
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil, &ExitError{Code: ExitRedis, Err: fmt.Errorf("redis %s: %s", shown, f.scrub(err.Error())), Hint: f.refusedHint()}
	}
	return nil, redisError(shown, fmt.Errorf("%s", f.scrub(err.Error())))
}

// refusedHint is the line after "connection refused": where the address came
// from, since a newcomer's shell that lost its LOCKCTL_REDIS_URL reaches the
// default server instead of the scratch one.
func (f *Factory) refusedHint() string {
	if f.cmd == nil { // no command to ask where the setting came from
		return ""
	}
	src := f.settingSource(f.cmd, keyRedisURL)
	if src == "default" {
		return "Nothing listens on lockctl's default server; point --redis, LOCKCTL_REDIS_URL or redis.url (lockctl.yaml) at yours."
	}
	return fmt.Sprintf("Is a redis-server listening there? The address comes from %s.", f.settingName(keyRedisURL, "--redis"))
}

// scrub replaces every known secret in s with ***.
func (f *Factory) scrub(s string) string {
	for _, sec := range f.secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "***")
		}
	}
	return s
}
