package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

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
	// secrets are scrubbed from every error Execute prints.
	secrets []string
}

// load reads the configuration for cmd; root's PersistentPreRunE calls it.
func (f *Factory) load(cmd *cobra.Command) error {
	v, path, err := loadConfig(cmd, f.ConfigFile)
	if err != nil {
		return err
	}
	f.Config, f.ConfigPath = v, path
	return nil
}

// Output returns the -o/--output format after checking it is one the
// command offers.
func (f *Factory) Output(accepted ...string) (string, error) {
	o := f.Config.GetString(keyOutput)
	if err := choice("output", o, accepted...); err != nil {
		return "", err
	}
	return o, nil
}

// quietLogger drops go-redis's internal log lines (dial retries and the
// like): errors reach the user once, as the command's one-line error.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietLogger{}) }

// RedisConn is a connected client with the URL to show (password redacted).
type RedisConn struct {
	Client redis.UniversalClient
	// URL is the redacted URL, safe to print.
	URL string
	// Timeout bounds each Redis call.
	Timeout time.Duration
}

// Close closes the client.
func (c *RedisConn) Close() error { return c.Client.Close() }

// Redis connects to the configured server and checks it answers PING. The
// password comes from the URL, else redis.password (LOCKCTL_REDIS_PASSWORD),
// else REDISCLI_AUTH. Errors are exit 3 and show only the redacted URL.
func (f *Factory) Redis(ctx context.Context) (*RedisConn, error) {
	raw := f.Config.GetString(keyRedisURL)
	shown := RedactURL(raw)
	timeout, err := durationSetting(f.Config, keyRedisTimeout, "timeout")
	if err != nil {
		return nil, err
	}
	opt, err := parseRedisURL(raw)
	if err != nil {
		return nil, usageErrorf("redis URL %q: %s; accepted: redis://[user[:password]@]host[:port][/db] or rediss:// for TLS", shown, err)
	}
	if opt.Password == "" {
		opt.Password = f.Config.GetString(keyRedisPassword)
	}
	if opt.Password == "" {
		opt.Password = os.Getenv("REDISCLI_AUTH")
	}
	if opt.Password != "" {
		f.secrets = append(f.secrets, opt.Password)
	}
	client := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:           []string{opt.Addr},
		DB:              opt.DB,
		Username:        opt.Username,
		Password:        opt.Password,
		TLSConfig:       opt.TLSConfig,
		DialTimeout:     timeout,
		ReadTimeout:     timeout,
		WriteTimeout:    timeout,
		MaxRetries:      -1, // a timed-out call is reported, not silently repeated
		DisableIdentity: true,
	})
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		_ = client.Close()
		if errors.Is(ctx.Err(), context.Canceled) { // Ctrl-C; a deadline is a Redis timeout
			return nil, ctx.Err()
		}
		return nil, redisError(shown, fmt.Errorf("%s", f.scrub(err.Error())))
	}
	return &RedisConn{Client: client, URL: shown, Timeout: timeout}, nil
}

// parseRedisURL is redis.ParseURL plus the checks it leaves to the dial: a
// port in 1..65535 and a database number that is not negative (go-redis
// treats -1 as 0). Its errors never quote the URL, which may hold a password.
func parseRedisURL(raw string) (*redis.Options, error) {
	opt, err := redis.ParseURL(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return nil, ue.Err
		}
		return nil, err
	}
	if _, port, err := net.SplitHostPort(opt.Addr); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
	}
	if opt.DB < 0 {
		return nil, fmt.Errorf("database number %d is negative", opt.DB)
	}
	return opt, nil
}

// RedactURL replaces the password of a redis:// URL with ***; anything that
// does not parse as a URL is returned with its userinfo cut out.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if at := strings.LastIndex(raw, "@"); at >= 0 {
			return "***@" + raw[at+1:]
		}
		return raw
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxx")
			return strings.Replace(u.String(), ":xxx@", ":***@", 1)
		}
	}
	return u.String()
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
