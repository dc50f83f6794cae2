//go:build !unix

package cmd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
)

// handOver runs the companion binary name (what: the command that needs
// it, for errors) with the same arguments, environment and streams, and
// exits with its code: without exec(2) the child is waited for, and Ctrl-C,
// which reaches it too, is ignored here so that it stops first.
func handOver(f *Factory, name, what string) error {
	path, err := findCompanion(name, what)
	if err != nil {
		return err
	}
	signal.Ignore(os.Interrupt)
	c := exec.Command(path, f.args...)
	c.Stdin, c.Stdout, c.Stderr, c.Env = f.IO.In, f.IO.Out, f.IO.ErrOut, companionEnv(f)
	err = c.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return &ExitError{Code: ee.ExitCode()}
	}
	return &ExitError{Code: ExitCannotRun, Err: fmt.Errorf("%s: cannot start %s: %w", what, path, err)}
}
