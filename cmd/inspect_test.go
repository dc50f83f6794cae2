package cmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
)

var bg = context.Background()

// run executes lockctl in-process in inprocEnv: tests that use it may run
// in parallel.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runEnv(t, nil, args...)
}

// runEnv is run with the variables env (KEY=VALUE) added to inprocEnv.
func runEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cmd.Execute(args, &cmd.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, Env: inprocEnv(t, env...)})
	return code, out.String(), errOut.String()
}

// inprocEnv is the environment of lockctl run in-process (IOStreams.Env):
// HOME and XDG_CONFIG_HOME in a temp dir, so no developer's config or
// LOCKCTL_* variable leaks in, no colour, the process's PATH, then extra.
func inprocEnv(t *testing.T, extra ...string) []string {
	home := t.TempDir()
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "NO_COLOR=1"}, extra...)
}

// seed writes one lock of a few layouts and returns their keys.
func seed(t *testing.T, c *redis.Client) []string {
	t.Helper()
	ks, err := lockcore.NewKeySpec("", "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockcore.NewLocker(c).Acquire(bg, ks.Keys("order-demo-001"), time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		c.Set(bg, "horizon:lock:x", "1", 0).Err(),
		c.HIncrBy(bg, "concurrent-test2", "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1", 1).Err(),
		c.PExpire(bg, "concurrent-test2", 30*time.Second).Err(),
		c.RPush(bg, "redisson_lock_queue:{concurrent-test2}", "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:2").Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return []string{"lock:OrderId:order-demo-001", "horizon:lock:x", "concurrent-test2"}
}

func decodeReport(t *testing.T, out string) map[string]any {
	t.Helper()
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return rep
}

func layouts(rep map[string]any) []string {
	var out []string
	for _, l := range rep["locks"].([]any) {
		out = append(out, l.(map[string]any)["layout"].(map[string]any)["name"].(string))
	}
	return out
}

// TestReadOnlyACL runs inspect and watch as a Redis user that may only read.
func TestReadOnlyACL(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	admin := s.Client(t)
	seed(t, admin)
	if err := admin.Do(bg, "acl", "setuser", "ro", "on", ">ro-pass", "~*", "resetchannels", "+@read", "+@connection", "-@write").Err(); err != nil {
		t.Fatal(err)
	}
	// The password from the environment: one in --redis gets a warning (docs/secrets.md).
	env := []string{"LOCKCTL_REDIS_PASSWORD=ro-pass"}
	url := "redis://ro@" + s.Addr + "/0"
	code, out, errOut := runEnv(t, env, "inspect", "order-demo-001", "--key", "horizon:lock:x", "--key", "concurrent-test2", "--redis", url, "-o", "json")
	if code != 0 || errOut != "" {
		t.Fatalf("inspect as read-only user: exit %d, stderr %q", code, errOut)
	}
	if got := strings.Join(layouts(decodeReport(t, out)), ","); got != "lockctl,unknown,redisson-fair" {
		t.Errorf("layouts read as read-only user = %s (a refused read would show as none)", got)
	}
	code, out, errOut = runEnv(t, env, "inspect", "--pattern", "*", "--redis", url, "-o", "json")
	if code != 0 || errOut != "" || !strings.Contains(out, `"redisson-fair": 1`) {
		t.Fatalf("inspect --pattern as read-only user: exit %d, stderr %q\n%s", code, errOut, out)
	}
	code, out, errOut = runEnv(t, env, "inspect", "order-demo-001", "--search", "--redis", url, "-o", "json")
	if code != 0 || errOut != "" {
		t.Fatalf("inspect --search as read-only user: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut = runEnv(t, env, "watch", "order-demo-001", "--key", "concurrent-test2", "--duration", "300ms", "--redis", url, "-o", "jsonl")
	if code != 0 || errOut != "" || !strings.Contains(out, `"event":"HELD"`) {
		t.Fatalf("watch as read-only user: exit %d, stderr %q\n%s", code, errOut, out)
	}
	// The same user cannot write: the ACL is real.
	ro := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "ro", Password: "ro-pass"})
	defer ro.Close()
	if err := ro.Set(bg, "x", "y", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("read-only user wrote: %v", err)
	}
}

// TestNoWriteCommands checks the server's command statistics after inspect
// and watch (of keys, and of a pattern: passes of SCAN and reads): no
// command flagged "write" was issued.
func TestNoWriteCommands(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	admin := s.Client(t)
	seed(t, admin)
	if err := admin.ConfigResetStat(bg).Err(); err != nil {
		t.Fatal(err)
	}
	url := s.URL()
	for _, args := range [][]string{
		{"inspect", "order-demo-001", "--key", "horizon:lock:x", "--key", "concurrent-test2", "--key", "absent"},
		{"inspect", "--pattern", "*", "-o", "jsonl"},
		{"inspect", "order-demo", "--search"},
		{"watch", "order-demo-001", "--key", "concurrent-test2", "--duration", "300ms"},
		{"watch", "--pattern", "*", "--interval", "50ms", "--duration", "300ms", "-o", "jsonl"},
	} {
		if code, _, errOut := run(t, append(args, "--redis", url)...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
	}
	info, err := admin.Info(bg, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(info, "\n") {
		name, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(strings.TrimSpace(line), "cmdstat_") {
			continue
		}
		names = append(names, name)
		parts := strings.Split(name, "|")
		res, err := admin.Do(bg, "command", "info", parts[0]).Slice()
		if err != nil || len(res) == 0 || res[0] == nil {
			t.Fatalf("COMMAND INFO %s: %v %v", name, res, err)
		}
		flags := res[0].([]any)[2].([]any)
		if parts[0] == "object" {
			continue // a container command: OBJECT IDLETIME itself is read-only
		}
		for _, f := range flags {
			if f == "write" {
				t.Errorf("%s is a write command", name)
			}
		}
	}
	if len(names) < 5 {
		t.Fatalf("commandstats lists only %v", names)
	}
	t.Logf("commands issued: %s", strings.Join(names, " "))
}

// TestInspectExitCodes: --fail-on, bad input, Redis down and refused auth.
func TestInspectExitCodes(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	seed(t, s.Client(t))
	url := s.URL()
	cases := []struct {
		args    []string
		code    int
		stderr  string
		hideErr string
	}{
		{[]string{"inspect", "order-demo-001", "--redis", url}, 0, "", ""},
		{[]string{"inspect", "order-demo-001", "--key", "concurrent-test2", "--fail-on", "warning", "--redis", url}, 1, "", ""},
		{[]string{"inspect", "order-demo-001", "--fail-on", "error", "--redis", url}, 0, "", ""},
		{[]string{"inspect", "--key", "horizon:lock:x", "--fail-on", "error", "--redis", url}, 1, "", ""},
		{[]string{"inspect", "--pattern", "*", "--fail-on", "error", "--redis", url, "-o", "jsonl"}, 1, "", ""},
		{[]string{"inspect", "--redis", url}, 2, "give a VALUE", ""},
		{[]string{"inspect", "x", "--fail-on", "info", "--redis", url}, 2, `fail-on "info" is not one of error, warning`, ""},
		{[]string{"inspect", "x", "-o", "xml", "--redis", url}, 2, `output "xml" is not one of table, json, yaml, jsonl`, ""},
		{[]string{"inspect", "", "--redis", url}, 2, `VALUE is empty: the key template`, ""},
		{[]string{"inspect", "x", "--key-template", "lock:{nope}", "--redis", url}, 2, "unknown placeholder {nope}", ""},
		{[]string{"inspect", "x", "--redis", "redis://admin:s3cret-pw@127.0.0.1:1/0"}, 3, "redis redis://admin:***@127.0.0.1:1/0", "s3cret-pw"},
		{[]string{"watch", "x", "--redis", "redis://admin:s3cret-pw@127.0.0.1:1/0"}, 3, "redis redis://admin:***@127.0.0.1:1/0", "s3cret-pw"},
		{[]string{"watch", "x", "--interval", "100", "--redis", url}, 2, `interval "100" has no unit`, ""},
		{[]string{"watch", "--redis", url}, 2, "give a VALUE", ""},
	}
	for _, tc := range cases {
		code, out, errOut := run(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q\n%s", tc.args, code, errOut, tc.code, tc.stderr, out)
		}
		if tc.hideErr != "" && strings.Contains(errOut+out, tc.hideErr) {
			t.Errorf("%v printed the password: %s", tc.args, errOut)
		}
		if strings.Contains(errOut, "panic") || strings.Count(strings.TrimSpace(errOut), "\n") > 1 {
			t.Errorf("%v: stderr is not one line: %q", tc.args, errOut)
		}
	}
}

// TestWrongPassword: a server that refuses auth is exit 3, password hidden.
func TestWrongPassword(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, "--requirepass", "right-pass")
	code, out, errOut := run(t, "inspect", "x", "--redis", "redis://:wrong-pass@"+s.Addr+"/0")
	if code != 3 || !strings.Contains(errOut, "redis://:***@"+s.Addr) || strings.Contains(errOut+out, "wrong-pass") {
		t.Errorf("exit %d stderr %q", code, errOut)
	}
	code, _, errOut = runEnv(t, []string{"LOCKCTL_REDIS_PASSWORD=wrong-pass"}, "watch", "x", "--redis", s.URL())
	if code != 3 || strings.Contains(errOut, "wrong-pass") || !strings.Contains(errOut, "WRONGPASS") {
		t.Errorf("watch: exit %d stderr %q", code, errOut)
	}
}

// TestWatchCase5 (shared/cases.md 5): a Redisson watchdog keeps renewing a
// lock whose thread ended; watch reports RENEWED, then RENEWED_PAST_BOUND once.
func TestWatchCase5(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client(t)
	const k, field = "concurrent-test2", "ea0fb3b6-09e2-4393-9e82-3b822e5e76c3:1"
	if err := c.HIncrBy(bg, k, field, 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.PExpire(bg, k, 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 8 { // the watchdog: PEXPIRE 30000 every 150ms
			time.Sleep(150 * time.Millisecond)
			_ = c.PExpire(bg, k, 30*time.Second).Err()
		}
	}()
	code, out, errOut := run(t, "watch", "--key", k, "--interval", "50ms", "--duration", "1300ms", "--renew-bound", "500ms", "--redis", s.URL(), "-o", "jsonl")
	<-done
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"event":"HELD"`) || strings.Count(out, `"event":"RENEWED"`) < 3 || strings.Count(out, `"event":"RENEWED_PAST_BOUND"`) != 1 {
		t.Errorf("events:\n%s", out)
	}
	if !strings.Contains(out, `"owner":"`+field+`"`) {
		t.Errorf("owner is the Redisson field: %s", out)
	}
}

// A --duration shorter than connecting still takes the first sample and
// exits 0: it counts from the connection and ends the loop between samples
// (it used to cut the connection's PING: "context deadline exceeded", exit 3).
func TestWatchShortDuration(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	code, out, errOut := run(t, "watch", "--key", "w:x", "--duration", "1ms", "--redis", s.URL())
	if code != 0 || !strings.Contains(out, "FREE w:x: no holder") || errOut != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestInspectReadRefused: a user whose ACL refuses TYPE gets exit 3 and one
// line naming the command and the key (inspect showed the lock as ABSENT,
// exit 0, and watch reported it released); the password is not shown.
func TestInspectReadRefused(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	admin := s.Client(t)
	seed(t, admin)
	if err := admin.Do(bg, "acl", "setuser", "notype", "on", ">notype-pass", "~*", "+@read", "+@connection", "-type").Err(); err != nil {
		t.Fatal(err)
	}
	env := []string{"LOCKCTL_REDIS_PASSWORD=notype-pass"} // not in --redis, which gets a warning
	url := "redis://notype@" + s.Addr + "/0"
	for _, args := range [][]string{
		{"inspect", "--key", "horizon:lock:x"},
		{"watch", "--key", "horizon:lock:x", "--duration", "300ms"},
	} {
		code, out, errOut := runEnv(t, env, append(args, "--redis", url)...)
		want := `lockctl: redis redis://***@` + s.Addr // a userinfo without a colon is masked whole + `/0: TYPE "horizon:lock:x": NOPERM`
		if code != cmd.ExitRedis || !strings.HasPrefix(errOut, want) || strings.Count(errOut, "\n") != 1 || strings.Contains(out+errOut, "notype-pass") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 3 and %q", args, code, out, errOut, want)
		}
	}
}
