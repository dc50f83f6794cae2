//go:build unix

package cmd

import (
	"fmt"
	"syscall"
)

// handOverExporter replaces this process with lockctl-exporter, given the
// same arguments and environment, so signals (SIGTERM) reach it directly.
// It returns only on failure.
func handOverExporter(f *Factory) error {
	path, err := findExporterBinary()
	if err != nil {
		return err
	}
	err = syscall.Exec(path, append([]string{path}, f.args...), f.IO.environ())
	return &ExitError{Code: ExitCannotRun, Err: fmt.Errorf("exporter: cannot start %s: %w", path, err)}
}
