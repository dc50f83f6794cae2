//go:build !unix

package cmd

import "os/exec"

// watchdog has no process group to watch where there are none (a Windows
// job object would be the way there): startWatchdog starts none, and the
// nil *watchdog does nothing.
type watchdog struct{}

func startWatchdog(func(*exec.Cmd) error) (*watchdog, error) { return nil, nil }

func (*watchdog) watch(int) {}
func (*watchdog) done()     {}

func runWatchdog() int { return ExitUsage }
