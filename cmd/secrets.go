package cmd

import (
	"fmt"
	"strings"
)

// redisCLIAuth is the variable redis-cli reads its password from; lockctl
// reads it after the URL and redis.password (docs/secrets.md).
const redisCLIAuth = "REDISCLI_AUTH"

// secretEnv reports whether the environment entry kv ("NAME=value") is one
// lockctl reads a password from (docs/secrets.md): LOCKCTL_REDIS_PASSWORD,
// LOCKCTL_REDIS_SENTINEL_PASSWORD, REDISCLI_AUTH, LOCKCTL_STORE_PASSWORD,
// and LOCKCTL_REDIS_URL or LOCKCTL_REDIS_SENTINEL when a URL in it holds a
// password (urlHasPassword).
func secretEnv(kv string) bool {
	name, val, _ := strings.Cut(kv, "=")
	if name == redisCLIAuth || name == storePasswordEnv {
		return true
	}
	for k := range secretKeys {
		if name == envName(k) {
			return true
		}
	}
	if name == envName(keyRedisURL) || name == envName(keyRedisSentinel) {
		for _, u := range strings.Split(val, ",") {
			if urlHasPassword(u) {
				return true
			}
		}
	}
	return false
}

// childEnv is environ for the command run starts: without lockctl's own
// secrets (secretEnv) unless pass (--pass-secrets), so a child that logs or
// dumps its environment, or anything it starts, does not carry the Redis
// password.
func childEnv(environ []string, pass bool) []string {
	if pass {
		return environ
	}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if !secretEnv(kv) {
			out = append(out, kv)
		}
	}
	return out
}

// passwordFlagWarning is said once when --redis carries a password: Go
// cannot rewrite its argv, so any process list shows it for the whole run
// (the warning redis-cli gives for -a and -u).
const passwordFlagWarning = "lockctl: warning: a password in --redis on the command line may not be safe: a process list shows it; " +
	"give it in LOCKCTL_REDIS_PASSWORD, REDISCLI_AUTH or the config file's redis.password instead\n"

// warnPasswordFlag writes passwordFlagWarning to stderr, once per process,
// when the --redis flag given to the command being run holds a password.
// Callers call it once the settings are known good (the server answered,
// or a dry run checked them), so an error is still one line.
func (f *Factory) warnPasswordFlag() {
	if f.passwordWarned || f.cmd == nil {
		return
	}
	f.passwordWarned = true
	if fl := f.cmd.Flags().Lookup("redis"); fl != nil && fl.Changed && urlHasPassword(fl.Value.String()) {
		fmt.Fprint(f.IO.ErrOut, passwordFlagWarning)
	}
}
