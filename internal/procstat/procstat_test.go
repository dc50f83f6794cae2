package procstat

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	// A command name with spaces and parentheses, state T (SIGSTOP).
	st, ok := Parse([]byte("4242 (my (odd) worker) T 4200 4242 7233 0 -1 4194304 136 0 0 0 0 0 0 0 20 0 1 0 72981 2990080 393"))
	want := Stat{Comm: "my (odd) worker", State: 'T', PPID: 4200, PGRP: 4242, StartTicks: 72981}
	if !ok || st != want {
		t.Errorf("Parse = %+v, %v; want %+v", st, ok, want)
	}
	for _, bad := range []string{"4242 (short) S 1", "", "4242 short S 1 2 3", "1 (x) S a 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0"} {
		if _, ok := Parse([]byte(bad)); ok {
			t.Errorf("Parse(%q) parsed", bad)
		}
	}
}

// TestReadSelfAndChild reads this process and a child it started, and
// lists both; a pid that never ran is fs.ErrNotExist.
func TestReadSelfAndChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/PID/stat is Linux's")
	}
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	st, err := Read(c.Process.Pid)
	if err != nil || st.PPID != os.Getpid() || st.StartTicks == 0 {
		t.Errorf("Read(child) = %+v, %v; want parent %d", st, err, os.Getpid())
	}
	self, err := Read(os.Getpid())
	if err != nil || self.State != 'R' && self.State != 'S' {
		t.Errorf("Read(self) = %+v, %v", self, err)
	}
	if all := PIDs(); !slices.Contains(all, os.Getpid()) || !slices.Contains(all, c.Process.Pid) {
		t.Errorf("PIDs() lacks this process or its child: %d pids", len(all))
	}
	if kids, ok := Children(os.Getpid()); ok && !slices.Contains(kids, c.Process.Pid) {
		t.Errorf("Children(self) = %v, lacks %d", kids, c.Process.Pid)
	}
	if _, err := Read(1 << 30); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read(a pid that never ran) = %v; want fs.ErrNotExist", err)
	}
}
