package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// probeResult is what one in-process lockctl invocation did.
type probeResult struct {
	code        int
	out, errOut string
}

// all is everything the invocation printed.
func (r probeResult) all() string { return r.out + r.errOut }

// probe runs lockctl in-process (the real root command, flags, config and
// error printing) with a "probe" subcommand that connects with f.Redis and
// hands the connection to use (nil: just the PING f.Redis does).
func probe(t *testing.T, use func(*RedisConn) error, args ...string) probeResult {
	t.Helper()
	return probeEnv(t, nil, use, args...)
}

// probeEnv is probe in an environment of its own (isolated), with the
// variables env (KEY=VALUE) added.
func probeEnv(t *testing.T, env []string, use func(*RedisConn) error, args ...string) probeResult {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, Env: isolated(t, env...)}}
	root := NewRootCmd(f)
	root.AddCommand(&cobra.Command{
		Use: "probe",
		RunE: func(c *cobra.Command, _ []string) error {
			conn, err := f.Redis(c.Context())
			if err != nil {
				return err
			}
			defer conn.Close()
			if use != nil {
				return use(conn)
			}
			_, err = f.IO.Out.Write([]byte(conn.URL + "\n"))
			return err
		},
	})
	code := execute(context.Background(), f, root, append([]string{"probe"}, args...))
	return probeResult{code: code, out: out.String(), errOut: errOut.String()}
}

// isolated is an environment that keeps the developer's config and Redis
// settings (REDISCLI_AUTH, LOCKCTL_*) out of a test: HOME and
// XDG_CONFIG_HOME in a temp dir, then extra (KEY=VALUE).
func isolated(t *testing.T, extra ...string) []string {
	home := t.TempDir()
	return append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + home + "/.config"}, extra...)
}

// envList is m as KEY=VALUE strings.
func envList(m map[string]string) []string {
	var env []string
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	return env
}

func wantCode(t *testing.T, r probeResult, code int, substr string) {
	t.Helper()
	if r.code != code || !strings.Contains(r.errOut, substr) {
		t.Fatalf("exit %d, stderr %q; want exit %d and %q", r.code, r.errOut, code, substr)
	}
	if code != ExitOK && strings.Count(strings.TrimSpace(r.errOut), "\n") > 1 {
		t.Errorf("error is more than one line and a hint: %q", r.errOut)
	}
	if strings.Contains(r.all(), "goroutine ") || strings.Contains(r.all(), "panic") {
		t.Errorf("stack trace in output: %q", r.all())
	}
}

// TestConnectPasswords covers ACL users and every password source, and greps
// all output (stdout and stderr) of every failing connection for the
// passwords involved.
func TestConnectPasswords(t *testing.T) {
	t.Parallel()
	const (
		defaultPW = "dflt-Pw-7xq2"
		alicePW   = "alice-Pw-93kd"
		wrongPW   = "wrong-Pw-55zz"
	)
	s := redistest.Start(t, "--requirepass", defaultPW)
	admin := redis.NewClient(&redis.Options{Addr: s.Addr, Password: defaultPW})
	defer admin.Close()
	if err := admin.Do(context.Background(), "ACL", "SETUSER", "alice", "on", ">"+alicePW, "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	secrets := []string{defaultPW, alicePW, wrongPW}

	ok := []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"ACL user in URL", nil, []string{"--redis", "redis://alice:" + alicePW + "@" + s.Addr + "/0"}},
		{"LOCKCTL_REDIS_PASSWORD", map[string]string{"LOCKCTL_REDIS_PASSWORD": alicePW}, []string{"--redis", "redis://alice@" + s.Addr + "/0"}},
		{"REDISCLI_AUTH", map[string]string{"REDISCLI_AUTH": defaultPW}, []string{"--redis", "redis://" + s.Addr + "/0"}},
		{"config file", nil, []string{"--config", writeFile(t, "cfg.yaml", "redis:\n  url: redis://alice@"+s.Addr+"/0\n  password: "+alicePW+"\n")}},
		{"URL wins over env", map[string]string{"LOCKCTL_REDIS_PASSWORD": wrongPW}, []string{"--redis", "redis://alice:" + alicePW + "@" + s.Addr + "/0"}},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			r := probeEnv(t, envList(c.env), nil, c.args...)
			wantCode(t, r, ExitOK, "")
			for _, sec := range secrets {
				if strings.Contains(r.all(), sec) {
					t.Errorf("password %q printed: %q", sec, r.all())
				}
			}
		})
	}

	bad := []struct {
		name string
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{"wrong ACL password", nil, []string{"--redis", "redis://alice:" + wrongPW + "@" + s.Addr + "/0"}, ExitRedis, "redis://alice:***@" + s.Addr + "/0: WRONGPASS"},
		{"wrong env password", map[string]string{"LOCKCTL_REDIS_PASSWORD": wrongPW}, []string{"--redis", "redis://alice@" + s.Addr + "/0"}, ExitRedis, "WRONGPASS"},
		{"wrong REDISCLI_AUTH", map[string]string{"REDISCLI_AUTH": wrongPW}, []string{"--redis", "redis://" + s.Addr + "/0"}, ExitRedis, "WRONGPASS"},
		{"no password", nil, []string{"--redis", "redis://" + s.Addr + "/0"}, ExitRedis, "NOAUTH"},
		{"unknown user", nil, []string{"--redis", "redis://bob:" + alicePW + "@" + s.Addr + "/0"}, ExitRedis, "WRONGPASS"},
		{"nobody listening", nil, []string{"--redis", "redis://alice:" + alicePW + "@127.0.0.1:1/0"}, ExitRedis, "redis://alice:***@127.0.0.1:1/0: dial tcp"},
		{"URL does not parse", nil, []string{"--redis", "redis://alice:" + alicePW + "@" + s.Addr + ":x:y/0"}, ExitUsage, "redis://alice:***@"},
		{"bad percent escape", nil, []string{"--redis", "redis://alice:" + alicePW + "%zz@" + s.Addr + "/0"}, ExitUsage, "must be percent-encoded"},
		{"bad database", nil, []string{"--redis", "redis://alice:" + alicePW + "@" + s.Addr + "/db1"}, ExitUsage, `invalid database number: "db1"`},
		{"no scheme", nil, []string{"--redis", "alice:" + alicePW + "@" + s.Addr + "/0"}, ExitUsage, `has no scheme; did you mean "redis://alice:***@`},
		{"unknown scheme", nil, []string{"--redis", "http://alice:" + alicePW + "@" + s.Addr}, ExitUsage, `unknown scheme "http"`},
		{"password in go-redis query", nil, []string{"--redis", "redis://" + s.Addr + "/0?master_name=m&password=" + alicePW}, ExitRedis, "password=***"},
		{"sentinel unreachable", nil, []string{"--redis", "redis+sentinel://alice:" + alicePW + "@127.0.0.1:1/mymaster/0"}, ExitRedis, "redis+sentinel://alice:***@127.0.0.1:1/mymaster/0"},
		{"cluster unreachable", nil, []string{"--redis", "redis+cluster://alice:" + alicePW + "@127.0.0.1:1,127.0.0.1:2"}, ExitRedis, "redis+cluster://alice:***@127.0.0.1:1,127.0.0.1:2"},
		{"bad timeout", nil, []string{"--redis", "redis://alice:" + alicePW + "@" + s.Addr, "--timeout", "5"}, ExitUsage, `timeout "5" has no unit`},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			r := probeEnv(t, envList(c.env), nil, append(c.args, "--timeout", "2s")...)
			if c.name == "bad timeout" {
				r = probeEnv(t, envList(c.env), nil, c.args...)
			}
			wantCode(t, r, c.code, c.msg)
			for _, sec := range secrets {
				if strings.Contains(r.all(), sec) {
					t.Errorf("password %q printed: %q", sec, r.all())
				}
			}
		})
	}
}

// TLS to a plain server says so, instead of "no answer" after the whole
// --timeout (issue 32 §6).
func TestConnectTLSToPlainServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r := probe(t, nil, "--redis", "rediss://"+srv.Addr+"/0", "--tls-insecure", "--timeout", "1s")
	wantCode(t, r, ExitRedis, srv.Addr+" does not speak TLS")
	if !strings.Contains(r.errOut, "use redis://") {
		t.Errorf("no advice to use redis://: %q", r.errOut)
	}
}

// TestConnectTLS connects to a TLS-only server with certificates generated
// by the test.
func TestConnectTLS(t *testing.T) {
	t.Parallel()
	s := redistest.StartTLS(t) // requires a client certificate
	url := s.URL()
	client := []string{"--tls-cert", s.CertFile, "--tls-key", s.KeyFile}

	r := probe(t, nil, append([]string{"--redis", url, "--tls-ca", s.CAFile}, client...)...)
	wantCode(t, r, ExitOK, "")
	if r.out != url+"\n" {
		t.Errorf("shown URL %q", r.out)
	}
	wantCode(t, probe(t, nil, append([]string{"--redis", url, "--tls-insecure"}, client...)...), ExitOK, "")

	// Environment and config keys reach the same settings.
	tlsEnv := []string{"LOCKCTL_REDIS_TLS_CA=" + s.CAFile, "LOCKCTL_REDIS_TLS_CERT=" + s.CertFile, "LOCKCTL_REDIS_TLS_KEY=" + s.KeyFile}
	wantCode(t, probeEnv(t, tlsEnv, nil, "--redis", url), ExitOK, "")

	// Verification is on unless asked: the test CA is not a system root.
	wantCode(t, probe(t, nil, append([]string{"--redis", url}, client...)...), ExitRedis, "certificate signed by unknown authority")
	// The server wants a client certificate.
	wantCode(t, probe(t, nil, "--redis", url, "--tls-ca", s.CAFile), ExitRedis, "rediss://"+s.Addr+"/0:")
	// Plain TCP to a TLS port: the server closes it, and the error says
	// that a TLS-only server does so.
	wantCode(t, probe(t, nil, "--redis", "redis://"+s.Addr+"/0", "--timeout", "1s"), ExitRedis, "a TLS-only server does that to plain RESP; if it speaks TLS, use rediss://")

	// Input errors: exit 2, naming the value.
	wantCode(t, probe(t, nil, "--redis", "redis://"+s.Addr+"/0", "--tls-ca", s.CAFile), ExitUsage, "need a rediss:// URL")
	wantCode(t, probe(t, nil, "--redis", url, "--tls-ca", "missing.pem"), ExitUsage, `--tls-ca "missing.pem": no such file or directory`)
	wantCode(t, probe(t, nil, "--redis", url, "--tls-ca", s.KeyFile), ExitUsage, "holds no PEM certificate")
	wantCode(t, probe(t, nil, "--redis", url, "--tls-cert", s.CertFile), ExitUsage, "--tls-cert and --tls-key go together")
	wantCode(t, probe(t, nil, "--redis", url, "--tls-cert", s.CertFile, "--tls-key", s.CAFile), ExitUsage, "--tls-key")

	// Without a client certificate requirement, the CA alone is enough.
	open := redistest.StartTLS(t, "--tls-auth-clients", "no")
	wantCode(t, probe(t, nil, "--redis", open.URL(), "--tls-ca", open.CAFile), ExitOK, "")
}

// TestConnectCluster reaches a real cluster through both spellings and
// follows MOVED redirections to every primary.
func TestConnectCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3)
	writeAll := func(conn *RedisConn) error {
		if _, ok := conn.Client.(*redis.ClusterClient); !ok {
			t.Errorf("client is %T, want *redis.ClusterClient", conn.Client)
		}
		ctx := context.Background()
		for _, k := range []string{"t:cluster:a", "t:cluster:b", "t:cluster:c", "t:cluster:d"} {
			if err := conn.Client.Set(ctx, k, "v", time.Minute).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	wantCode(t, probe(t, writeAll, "--redis", c.URL()), ExitOK, "")
	wantCode(t, probe(t, writeAll, "--redis", "redis://"+c.Nodes[1].Addr, "--cluster"), ExitOK, "")
	// An IPv6 literal in the host list (url.Parse alone refuses the list).
	wantCode(t, probe(t, writeAll, "--redis", "redis+cluster://[::1]:1,"+c.Nodes[0].Addr), ExitOK, "")
	wantCode(t, probe(t, nil, "--redis", "redis+cluster://"+c.Nodes[0].Addr+",[::1:1"), ExitUsage, `host "[::1:1" does not parse: missing ']' in host`)
	wantCode(t, probeEnv(t, []string{"LOCKCTL_REDIS_CLUSTER=true"}, writeAll, "--redis", "redis://"+c.Nodes[2].Addr+"/0"), ExitOK, "")

	wantCode(t, probe(t, nil, "--redis", "redis://"+c.Nodes[0].Addr+"/3", "--cluster"), ExitUsage, `only database 0, not "3"`)
	wantCode(t, probe(t, nil, "--redis", c.URL(), "--sentinel", c.Nodes[0].Addr, "--master-name", "m"), ExitUsage, "cannot be combined")
	// A cluster node without --cluster is seen as one (INFO cluster): the
	// cluster client reaches every slot, and stderr says so once.
	r := probe(t, writeAll, "--redis", "redis://"+c.Nodes[0].Addr+"/0")
	if r.code != ExitOK || r.errOut != "lockctl: "+c.Nodes[0].Addr+" is a cluster node: using the cluster (redis+cluster:// says so up front)\n" {
		t.Errorf("a redis:// URL naming a cluster node: %q", r.all())
	}
}

// TestConnectSentinel connects through a sentinel by flags and by URL, and
// keeps working on the new primary after a forced failover.
func TestConnectSentinel(t *testing.T) {
	t.Parallel()
	sn := redistest.StartSentinel(t)
	ctx := context.Background()

	r := probe(t, nil, "--sentinel", sn.Addr(), "--master-name", redistest.MasterName)
	wantCode(t, r, ExitOK, "")
	if r.out != "sentinel "+sn.Addr()+" master mymaster\n" {
		t.Errorf("shown address %q", r.out)
	}
	wantCode(t, probe(t, nil, "--redis", "redis://127.0.0.1:1/0?master_name=mymaster&addr="+sn.Addr()), ExitOK, "")
	// An IPv6 literal in the host list, first or not (the first sentinel is
	// down: lockctl asks the next).
	wantCode(t, probe(t, nil, "--redis", "redis+sentinel://[::1]:1,"+sn.Addr()+"/mymaster/0"), ExitOK, "")
	wantCode(t, probe(t, nil, "--redis", "redis+sentinel://127.0.0.1:1,[::1]:1,"+sn.Addr()+"/mymaster/0"), ExitOK, "")
	wantCode(t, probeEnv(t, []string{"LOCKCTL_REDIS_SENTINEL=127.0.0.1:1," + sn.Addr(), "LOCKCTL_REDIS_MASTER_NAME=" + redistest.MasterName}, nil), ExitOK, "")
	cfg := writeFile(t, "cfg.yaml", "redis:\n  sentinel:\n    - 127.0.0.1:1\n    - "+sn.Addr()+"\n  master_name: mymaster\n")
	wantCode(t, probe(t, nil, "--config", cfg), ExitOK, "")

	wantCode(t, probe(t, nil, "--sentinel", sn.Addr()), ExitUsage, "needs --master-name")
	wantCode(t, probe(t, nil, "--sentinel", "sentinel-a", "--master-name", "m"), ExitUsage, `--sentinel address "sentinel-a" is not host:port`)
	wantCode(t, probe(t, nil, "--master-name", "mymaster"), ExitUsage, "needs --sentinel")
	wantCode(t, probe(t, nil, "--redis", "redis+sentinel://"+sn.Addr()), ExitUsage, "/<master name>[/<db>]")
	wantCode(t, probe(t, nil, "--sentinel", sn.Addr(), "--master-name", "nosuch", "--timeout", "2s"), ExitRedis, "sentinel "+sn.Addr()+" master nosuch: the sentinels that answered monitor no primary named \"nosuch\"")
	// They are reachable: go-redis' own words ("all sentinels specified in
	// configuration are unreachable: redis: nil") said the opposite.
	wantCode(t, probe(t, nil, "--redis", "redis+sentinel://"+sn.Addr()+"/nosuch/0", "--timeout", "2s"), ExitRedis, `monitor no primary named "nosuch"`)

	follow := func(conn *RedisConn) error {
		if err := conn.Client.Set(ctx, "t:sentinel:before", "1", time.Minute).Err(); err != nil {
			return err
		}
		// Replication is asynchronous: without WAIT a forced failover may
		// promote the replica before it has the write.
		if n, err := conn.Client.Do(ctx, "WAIT", 1, 2000).Int(); err != nil || n != 1 {
			t.Fatalf("WAIT 1: %d replicas, %v", n, err)
		}
		newPrimary := sn.Failover(t)
		direct := redis.NewClient(&redis.Options{Addr: newPrimary})
		defer direct.Close()
		// Until the client hears +switch-master, writes may still reach the
		// demoted primary (and be lost when it resyncs: the failover hazard
		// fencing tokens exist for) or fail; it must converge on the new one.
		deadline := time.Now().Add(20 * time.Second)
		for i := 0; ; i++ {
			want := strconv.Itoa(i)
			err := conn.Client.Set(ctx, "t:sentinel:after", want, time.Minute).Err()
			if err == nil && direct.Get(ctx, "t:sentinel:after").Val() == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("client still not writing to the new primary %s after 20s: %v", newPrimary, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if v, err := direct.Get(ctx, "t:sentinel:before").Result(); v != "1" {
			t.Errorf("write before failover lost: %q, %v", v, err)
		}
		return nil
	}
	wantCode(t, probe(t, follow, "--redis", sn.URL()), ExitOK, "")
}

// TestConnectRefusedShortTimeout: a port nobody listens on is reported as
// refused at once, whatever --timeout is. go-redis' dial retries (five,
// 100ms apart; a sentinel's take longer) outlasted a short timeout, and the
// error became "context deadline exceeded", as if the server were slow.
func TestConnectRefusedShortTimeout(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--redis", "redis://127.0.0.1:1/0", "--timeout", "200ms"},
		{"--redis", "redis+cluster://127.0.0.1:1,127.0.0.1:2", "--timeout", "200ms"},
		{"--sentinel", "127.0.0.1:1", "--master-name", "mymaster", "--timeout", "1s"},
	} {
		// "refused", not "context deadline exceeded", shows the retries did
		// not outlast the timeout; the time is only bounded by the longest
		// --timeout, which a loaded machine cannot stretch an answer past.
		start := time.Now()
		wantCode(t, probe(t, nil, args...), ExitRedis, "connect: connection refused")
		if d := time.Since(start); d > time.Second {
			t.Errorf("%v: refused after %v; want at once, before the timeout", args, d)
		}
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"redis://127.0.0.1:6379/0":                   "redis://127.0.0.1:6379/0",
		"redis://u:p@h:1/0":                          "redis://u:***@h:1/0",
		"redis://:p@h:1":                             "redis://:***@h:1",
		"redis://pw@h:1":                             "redis://***@h:1",
		"rediss://u:p@ss@word@h:1/0":                 "rediss://u:***@h:1/0",
		"redis+sentinel://u:p@a:1,b:2/m/0":           "redis+sentinel://u:***@a:1,b:2/m/0",
		"redis://h:1/0?master_name=m&password=p&x=1": "redis://h:1/0?master_name=m&password=***&x=1",
		"redis://u:p@h:1?sentinel_password=q":        "redis://u:***@h:1?sentinel_password=***",
		"redis://u:p w@h:x:y/0":                      "redis://u:***@h:x:y/0",
		"not a url":                                  "not a url",
		"u:p@h:1/0":                                  "u:***@h:1/0",
		"//u:p@h:1":                                  "//u:***@h:1",
	}
	for in, want := range cases {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
