package cmd_test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// recorder is a loopback listener that keeps every byte sent to it and
// closes each connection after its first read: what a hostile server
// chosen by a checkout's lockctl.yaml would learn.
type recorder struct {
	ln    net.Listener
	mu    sync.Mutex
	conns int
	got   bytes.Buffer
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	r := &recorder{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			n, _ := c.Read(buf)
			r.mu.Lock()
			r.conns++
			r.got.Write(buf[:n])
			r.mu.Unlock()
			_ = c.Close()
		}
	}()
	return r
}

func (r *recorder) seen() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns, r.got.String()
}

// lockctlIn runs `lockctl args...` in dir with HOME (and so the trust
// store) in home and env added; it returns the exit code, stdout, stderr.
func lockctlIn(t *testing.T, dir, home string, env []string, args ...string) (int, string, string) {
	t.Helper()
	c := exec.Command("lockctl", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), append([]string{"HOME=" + home, "XDG_CONFIG_HOME=", "NO_COLOR=1", "LOCKCTL_REDIS_URL=", "LOCKCTL_REDIS_PASSWORD=", "REDISCLI_AUTH="}, env...)...)
	var out, errOut strings.Builder
	c.Stdout, c.Stderr = &out, &errOut
	var ee *exec.ExitError
	if err := c.Run(); err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return c.ProcessState.ExitCode(), out.String(), errOut.String()
}

// TestUntrustedConfigSendsNoPassword: a lockctl.yaml in the current
// directory that points elsewhere got the password of REDISCLI_AUTH or
// LOCKCTL_REDIS_PASSWORD in clear text (issue 33). Untrusted, it is
// refused before any dial; trusted with config trust (or named with
// --config) it is used; changed, it is untrusted again.
func TestUntrustedConfigSendsNoPassword(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	dir, home := t.TempDir(), t.TempDir()
	cfg := "redis:\n  url: redis://" + rec.ln.Addr().String() + "/0\n  timeout: 2s\n"
	if err := os.WriteFile(filepath.Join(dir, "lockctl.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	const pw = "env-secret-pw-33"
	for _, env := range []string{"REDISCLI_AUTH=" + pw, "LOCKCTL_REDIS_PASSWORD=" + pw} {
		code, _, stderr := lockctlIn(t, dir, home, []string{env}, "inspect", "order-1")
		if code != 2 || !strings.Contains(stderr, "lockctl.yaml in the current directory sets redis.url, but it is not trusted") ||
			!strings.Contains(stderr, "lockctl config trust") || strings.Contains(stderr, pw) {
			t.Errorf("%s, untrusted: exit %d (want 2), stderr %q", env, code, stderr)
		}
	}
	if n, got := rec.seen(); n != 0 {
		t.Fatalf("untrusted file: the listener got %d connections: %q", n, got)
	}

	if code, stdout, stderr := lockctlIn(t, dir, home, nil, "config", "trust"); code != 0 || !strings.Contains(stdout, "trusted ") {
		t.Fatalf("config trust: exit %d, %q %q", code, stdout, stderr)
	}
	// Trusted: used, so the password goes there (the listener can tell).
	if code, _, stderr := lockctlIn(t, dir, home, []string{"REDISCLI_AUTH=" + pw}, "inspect", "order-1"); code != 3 {
		t.Errorf("trusted: exit %d (want 3, the listener hangs up), stderr %q", code, stderr)
	}
	if n, got := rec.seen(); n == 0 || !strings.Contains(got, pw) {
		t.Fatalf("trusted file: %d connections, got %q; want the AUTH", n, got)
	}
	before, _ := rec.seen()

	// Changed after it was trusted: untrusted again.
	if err := os.WriteFile(filepath.Join(dir, "lockctl.yaml"), []byte(cfg+"output: json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := lockctlIn(t, dir, home, []string{"REDISCLI_AUTH=" + pw}, "inspect", "order-1"); code != 2 || !strings.Contains(stderr, "not trusted") {
		t.Errorf("changed file: exit %d (want 2), stderr %q", code, stderr)
	}
	if n, _ := rec.seen(); n != before {
		t.Errorf("changed file: %d new connections", n-before)
	}
	// Named with --config, the user chose it.
	if code, _, stderr := lockctlIn(t, dir, home, nil, "--config", "lockctl.yaml", "inspect", "order-1"); code != 3 {
		t.Errorf("--config: exit %d (want 3), stderr %q", code, stderr)
	}
	// A flag or variable that overrides the file's address needs no trust.
	if code, _, stderr := lockctlIn(t, dir, home, []string{"LOCKCTL_REDIS_URL=redis://127.0.0.1:1/0"}, "inspect", "order-1"); code != 3 || strings.Contains(stderr, "not trusted") {
		t.Errorf("env URL: exit %d (want 3, refused dial), stderr %q", code, stderr)
	}
}

// TestUntrustedConfigKeyTemplate: an untrusted lockctl.yaml could change
// the key template, so two `run order-1` held "the" lock at once (issue
// 33); it is refused. A file setting only the output format is used, with
// one line naming it, and lockctl version reads it as before.
func TestUntrustedConfigKeyTemplate(t *testing.T) {
	t.Parallel()
	dir, home := t.TempDir(), t.TempDir()
	write := func(s string, mode os.FileMode) {
		p := filepath.Join(dir, "lockctl.yaml")
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("lock:\n  key_template: \"other:{value}\"\n", 0o600)
	code, _, stderr := lockctlIn(t, dir, home, nil, "run", "order-1", "--budget", "10s", "--dry-run", "--", "true")
	if code != 2 || !strings.Contains(stderr, "sets lock.key_template, but it is not trusted") {
		t.Errorf("run, untrusted key template: exit %d (want 2), stderr %q", code, stderr)
	}
	if code, _, stderr := lockctlIn(t, dir, home, nil, "run", "order-1", "--budget", "10s", "--dry-run", "--key-template", "lock:{field}:{value}", "--", "true"); code != 0 {
		t.Errorf("run, the flag overriding the file: exit %d, stderr %q", code, stderr)
	}

	write("output: json\n", 0o644)
	code, stdout, stderr := lockctlIn(t, dir, home, nil, "version")
	if code != 0 || !strings.Contains(stdout, `"version"`) || stderr != "lockctl: using lockctl.yaml from the current directory\n" {
		t.Errorf("version: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// The user's own config file is named by nobody.
	own := filepath.Join(home, ".config", "lockctl")
	if err := os.MkdirAll(own, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(own, "config.yaml"), []byte("output: json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := lockctlIn(t, home, home, nil, "version"); code != 0 || stderr != "" {
		t.Errorf("version with the user's file: exit %d, stderr %q", code, stderr)
	}

	if runtime.GOOS == "windows" {
		return
	}
	write("redis:\n  password: file-pw\n", 0o644)
	if _, _, stderr := lockctlIn(t, dir, home, nil, "version"); !strings.Contains(stderr, "lockctl: warning: lockctl.yaml holds a password and is readable by group or others (mode 0644); chmod 600 lockctl.yaml") {
		t.Errorf("password in a 0644 file: stderr %q", stderr)
	}
	write("redis:\n  password: file-pw\n", 0o600)
	if _, _, stderr := lockctlIn(t, dir, home, nil, "version"); strings.Contains(stderr, "warning") {
		t.Errorf("password in a 0600 file: stderr %q", stderr)
	}
}
