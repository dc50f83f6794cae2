//go:build unix

package cmd

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// The signal context installs its handlers on first use, and a SIGTERM then
// cancels it and the contexts derived from it.
func TestSignalContext(t *testing.T) {
	c := &signalContext{Context: context.Background()}
	if c.installed.Load() {
		t.Fatal("installed before use")
	}
	child, cancel := context.WithTimeout(c, time.Minute) // waits on c.Done()
	defer cancel()
	if !c.installed.Load() {
		t.Fatal("deriving a context did not install the handlers")
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not cancel the derived context")
	}
	if c.Err() == nil {
		t.Error("Err is nil after SIGTERM")
	}
	if got := c.signal(); got != syscall.SIGTERM {
		t.Errorf("signal() = %v, want SIGTERM (execute exits 143 with it)", got)
	}
	c.stop()
}
