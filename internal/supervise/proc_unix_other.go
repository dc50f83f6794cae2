//go:build unix && !linux

package supervise

// findChildGroups finds nothing: only Linux has the /proc to seek in.
func findChildGroups(int) []int { return nil }

// isStopped is false: only Linux has the /proc to read it in.
func isStopped(int) bool { return false }

// continueBeforeExec does nothing: only Linux has the /proc to read it in.
func continueBeforeExec(int) {}
