package cmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// exporterBinary is the binary `lockctl exporter` hands over to when this
// one does not link exporter/prom (exporter's package comment says why).
const exporterBinary = "lockctl-exporter"

// findExporterBinary returns lockctl-exporter's path: beside this
// executable (the release archives hold both), else on PATH. The error
// exits 127, as a shell's for a command not found.
func findExporterBinary() (string, error) {
	name := exporterBinary
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	self, err := os.Executable()
	if err == nil {
		beside := filepath.Join(filepath.Dir(self), name)
		if st, err := os.Stat(beside); err == nil && !st.IsDir() {
			return beside, nil
		}
	}
	if path, err := exec.LookPath(name); err == nil {
		return path, nil
	}
	return "", &ExitError{Code: ExitCannotRun, Err: fmt.Errorf(
		"exporter: %s is not beside %s nor on PATH: install it from the release archive, or: go install github.com/lockctl/lockctl/lockctl-exporter@latest", name, self)}
}
