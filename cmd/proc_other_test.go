//go:build !unix

package cmd_test

import "os/exec"

// detach does nothing where there are no sessions (Windows).
func detach(*exec.Cmd) {}
