//go:build unix

package cmd_test

import (
	"os/exec"
	"syscall"
)

// detach starts c in a session of its own, with no controlling terminal, as
// in CI: run from a terminal, lockctl took the developer's (its stdin is no
// terminal: /dev/tty), and a test that stops the child stopped lockctl's
// job, the test binary with it.
func detach(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
