//go:build !unix

package supervise

import (
	"errors"
	"os/exec"
	"time"
)

// watchdog has no process group to watch where there are none (a Windows
// job object would be the way there): startWatchdog starts none, and the
// nil *watchdog does nothing.
type watchdog struct{}

func startWatchdog(func(*exec.Cmd) error, time.Duration, time.Time) (*watchdog, error) {
	return nil, nil
}

func (*watchdog) watch(int)            {}
func (*watchdog) renewed(time.Time)    {}
func (*watchdog) stop(time.Time)       {}
func (*watchdog) mayHaveStopped() bool { return false }
func (*watchdog) done()                {}

// RunWatchdog returns errors.ErrUnsupported: there is no watchdog here.
func RunWatchdog(int) error { return errors.ErrUnsupported }
