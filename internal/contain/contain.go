// Package contain keeps every process a command starts within reach, so
// that `lockctl trial` can pause, kill and end a worker's whole tree, even
// the helpers that left its process group or session (setsid, daemons).
// Three mechanisms, best first (Mode):
//   - cgroup: a cgroup v2 per tree; cgroup.freeze pauses it atomically,
//     cgroup.kill kills it, and nothing started inside can leave it;
//   - subreaper: lockctl is the child subreaper (prctl(2),
//     PR_SET_CHILD_SUBREAPER), so orphans re-parent to it; the tree is
//     walked in /proc (parent links, plus a marker in the environment) and
//     stopped process by process until no new one appears;
//   - process-group: the command's process group only (systems without
//     /proc).
//
// It never prints; Linux-only parts sit behind build tags.
package contain

// Modes, as the trial's result names them ("containment").
const (
	ModeCgroup       = "cgroup"
	ModeSubreaper    = "subreaper"
	ModeProcessGroup = "process-group"
)

// MarkerEnv is the environment variable each tree's processes inherit
// (value: the tree's id), by which an orphan that re-parented to lockctl
// before a walk saw it is still known as the tree's.
const MarkerEnv = "LOCKCTL_CONTAIN"
