//go:build unix

package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO named as an input file is refused at once (exit 2, one line naming
// it) instead of blocking forever in open(2) for a writer that never comes;
// a symlink to one is refused too, a symlink to a regular file is read.
func TestInputFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--file", fifo}, `scenario file "` + fifo + `" is a named pipe (FIFO); give a regular file`},
		{[]string{"simulate", "--file", link}, `scenario file "` + link + `" is a named pipe (FIFO); give a regular file`},
		{[]string{"checklist", "--spec", fifo}, `spec "` + fifo + `" is a named pipe (FIFO); give a regular file`},
		{[]string{"lease", "--budget", "30s", "--config", fifo}, `config file "` + fifo + `" is a named pipe (FIFO); give a regular file`},
		{[]string{"lease", "--budget", "30s", "--config", dir}, `config file "` + dir + `" is a directory; give a regular file`},
		{[]string{"inspect", "k", "--redis", "rediss://127.0.0.1:1", "--tls-ca", fifo}, `--tls-ca "` + fifo + `" is a named pipe (FIFO); give a regular file`},
		{[]string{"simulate", "--file", "/dev/null"}, `scenario file "/dev/null" is a device; give a regular file`},
	} {
		type result struct {
			errOut string
			code   int
		}
		done := make(chan result, 1)
		go func() {
			_, errOut, code := execute(t, tc.args...)
			done <- result{errOut, code}
		}()
		select {
		case r := <-done:
			first, _, _ := strings.Cut(r.errOut, "\n")
			if r.code != 2 || !strings.Contains(first, tc.want) {
				t.Errorf("%v: exit %d, stderr %q; want exit 2 with %q", tc.args, r.code, r.errOut, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: still blocked after 10s", tc.args)
		}
	}
	real := filepath.Join(dir, "real.yaml")
	if err := os.WriteFile(real, []byte("name: x\npolicy: {lease: 30s}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	regLink := filepath.Join(dir, "reg-link.yaml")
	if err := os.Symlink(real, regLink); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := execute(t, "simulate", "--file", regLink); code != 0 {
		t.Errorf("symlink to a regular file: exit %d, stderr %q", code, errOut)
	}
	// A regular file is still read only up to its limit.
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, 1<<20+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := execute(t, "checklist", "--spec", big); code != 2 || !strings.Contains(errOut, "is over 1048576 bytes") {
		t.Errorf("spec over 1 MiB: exit %d, stderr %q", code, errOut)
	}
}
