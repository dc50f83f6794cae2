//go:build unix

package cmd

import (
	"fmt"
	"syscall"
)

// handOver replaces this process with the companion binary name (what: the
// command that needs it, for errors), given the same arguments and
// environment, so signals (SIGTERM) reach it directly.
// It returns only on failure.
func handOver(f *Factory, name, what string) error {
	path, err := findCompanion(name, what)
	if err != nil {
		return err
	}
	err = syscall.Exec(path, append([]string{path}, f.args...), companionEnv(f))
	return &ExitError{Code: ExitCannotRun, Err: fmt.Errorf("%s: cannot start %s: %w", what, path, err)}
}
