//go:build !unix

package cmd

// startWatchdog starts nothing where there are no process groups to kill
// (a Windows job object would be the way there).
func startWatchdog(int) (func(), error) { return func() {}, nil }

func runWatchdog(string) int { return ExitUsage }
