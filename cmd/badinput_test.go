package cmd_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
	"go.yaml.in/yaml/v3"
)

// badCase is one entry of testdata/badinput/cases.yaml: hostile or careless
// input and the one-line error lockctl must answer it with.
type badCase struct {
	Name string   `yaml:"name"`
	Args []string `yaml:"args"` // $REDIS_URL, $AUTH_PORT, $SILENT_ADDR and $DIR are substituted
	// Stdin is fed to lockctl (empty: no input).
	Stdin string `yaml:"stdin"`
	// Files are written into the case's working directory first (!!binary
	// for raw bytes); Deep writes name → that many nested YAML flow lists.
	Files map[string]string `yaml:"files"`
	Deep  map[string]int    `yaml:"deep"`
	// Env adds environment variables (after the substitutions above).
	Env map[string]string `yaml:"env"`
	// Code is the expected exit code; Stderr a regexp the first stderr
	// line must match.
	Code   int    `yaml:"code"`
	Stderr string `yaml:"stderr"`
	// Secret must not appear in stdout or stderr.
	Secret string `yaml:"secret"`
	// Lines is the most stderr lines allowed (default 2: the error and the
	// usage hint).
	Lines int `yaml:"lines"`
	// Unchanged: the case must not change the Redis keyspace (read-only
	// commands).
	Unchanged bool `yaml:"unchanged"`
}

// TestBadInput runs every case of testdata/badinput/cases.yaml against the
// lockctl binary: the documented exit code, one error line naming the value,
// no panic or stack trace, no secret in any output, and no write to Redis
// from a read-only command.
func TestBadInput(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/badinput/cases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []badCase
	if err := yaml.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 60 {
		t.Errorf("%d cases; the corpus needs at least 60", len(cases))
	}
	s := redistest.Start(t)
	auth := redistest.Start(t, "--requirepass", "corpus-pw-9f3k")
	// silent accepts connections and never answers: a hung server.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	seed := s.Client(t)
	ctx := context.Background()
	for _, c := range [][]any{
		{"HSET", "lock:OrderId:corpus-hash", "owner", "x"},
		{"RPUSH", "lock:OrderId:corpus-list", "x"},
		{"SET", "lock:OrderId:corpus-held", "7:0123456789abcdef0123456789abcdef", "PX", 600000},
		{"SET", "{lock:OrderId:corpus-badfence}:fence", "notint"},
		// Terminal control sequences in a key name and an owner token.
		{"SET", "lock:OrderId:corpus-esc\x1b]0;pwned\x07", "1:own\x1b[2Jer", "PX", 600000},
		{"SET", "lock:OrderId:corpus-esc2", "1:own\x1b[2J\rer\u009b", "PX", 600000},
	} {
		if err := seed.Do(ctx, c...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	digest := func() string {
		keys, err := seed.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		for _, k := range keys {
			d, _ := seed.Dump(ctx, k).Result()
			sb.WriteString(k + "=" + d + "\n")
		}
		return sb.String()
	}

	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.Name] {
			t.Errorf("duplicate case name %q", c.Name)
		}
		seen[c.Name] = true
		t.Run(c.Name, func(t *testing.T) {
			// No case writes Redis: those that may not change it run first,
			// alone, so the keyspace they compare is theirs.
			if !c.Unchanged {
				t.Parallel()
			}
			dir := t.TempDir()
			repl := strings.NewReplacer("$REDIS_URL", s.URL(), "$SILENT_ADDR", silent.Addr().String(), "$AUTH_PORT", strings.TrimPrefix(auth.Addr, "127.0.0.1:"), "$DIR", dir)
			for name, content := range c.Files {
				writeCaseFile(t, filepath.Join(dir, name), []byte(content))
			}
			for name, n := range c.Deep {
				writeCaseFile(t, filepath.Join(dir, name), []byte(strings.Repeat("[", n)+strings.Repeat("]", n)+"\n"))
			}
			args := make([]string, len(c.Args))
			for i, a := range c.Args {
				args[i] = repl.Replace(a)
			}
			var before string
			if c.Unchanged {
				before = digest()
			}
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			cmd := exec.CommandContext(cctx, "lockctl", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "NO_COLOR=1",
				"LOCKCTL_REDIS_URL="+s.URL())
			for k, v := range c.Env {
				cmd.Env = append(cmd.Env, k+"="+repl.Replace(v))
			}
			cmd.Stdin = strings.NewReader(c.Stdin)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if cctx.Err() != nil {
				t.Fatalf("lockctl %q did not end within 15s", args)
			}
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			code, errOut := cmd.ProcessState.ExitCode(), stderr.String()
			if code != c.Code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, c.Code, errOut)
			}
			if strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine ") {
				t.Errorf("panic or stack trace on stderr:\n%s", errOut)
			}
			lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
			if max := orDefault(c.Lines, 2); errOut != "" && len(lines) > max {
				t.Errorf("%d stderr lines, want at most %d:\n%s", len(lines), max, errOut)
			}
			if c.Stderr != "" && !regexp.MustCompile(c.Stderr).MatchString(lines[0]) {
				t.Errorf("stderr line 1 %q does not match %q", lines[0], c.Stderr)
			}
			if i := strings.IndexFunc(stdout.String(), isTerminalControl); i >= 0 {
				t.Errorf("control character %q in stdout at byte %d:\n%s", stdout.String()[i:i+1], i, stdout.String())
			}
			if c.Secret != "" && strings.Contains(stdout.String()+errOut, c.Secret) {
				t.Errorf("secret %q printed:\nstdout: %s\nstderr: %s", c.Secret, stdout.String(), errOut)
			}
			if c.Unchanged && digest() != before {
				t.Errorf("a read-only command changed the keyspace")
			}
		})
	}
}

// isTerminalControl reports whether r could drive a terminal: C0 controls but
// newline and tab, DEL, and C1 controls (lockctl runs here without colour).
func isTerminalControl(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f
}

func writeCaseFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil { // a config file with a password in it warns when others may read it
		t.Fatal(err)
	}
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
