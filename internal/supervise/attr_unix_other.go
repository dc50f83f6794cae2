//go:build unix && !linux

package supervise

import "syscall"

// GroupAttr starts a child as the leader of its own process group (for the
// *Group functions). Each call returns a new value to set as
// exec.Cmd.SysProcAttr.
func GroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
