//go:build unix && !linux

package cmd

import "syscall"

// childProcAttr starts the child as the leader of its own process group.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
