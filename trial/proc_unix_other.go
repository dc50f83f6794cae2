//go:build unix && !linux

package trial

import "syscall"

// groupAttr starts a worker as the leader of its own process group.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
