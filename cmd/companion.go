package cmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
)

// A companion is lockctl with more linked in, for the commands that need
// what every other start should not pay for (issue 42: start-up within 3x
// a Go hello world): lockctl hands such a command over to it, the way git
// runs git-<name>.
const (
	// exporterBinary links the Prometheus client: `lockctl exporter`.
	exporterBinary = "lockctl-exporter"
	// storeBinary links trial/store and its SQL drivers: trial and
	// diagnose given --store.
	storeBinary = "lockctl-store"
)

// handedOverEnv marks a companion's environment: the lockctl that handed
// the command over has printed the config notices (configNotices), which
// the companion then leaves out (takeHandOver removes it before anything
// runs, so no child of the command sees it). lockctl hands over before it
// connects, so the password warning is the companion's own.
const handedOverEnv = "LOCKCTL_HANDED_OVER"

// companionEnv is the environment a companion gets: lockctl's, marked.
func companionEnv(f *Factory) []string {
	return append(slices.Clone(f.IO.environ()), handedOverEnv+"=1")
}

// takeHandOver reads and removes the hand-over mark: set, this process is
// a companion whose lockctl already printed its stderr notices.
func (f *Factory) takeHandOver() {
	if f.IO.getenv(handedOverEnv) == "" {
		return
	}
	f.handedOver = true
	f.IO.unsetenv(handedOverEnv)
}

// findCompanion returns the path of the companion binary name: beside this
// executable (the release archives hold them all), else on PATH. The error
// names what needs it (what, e.g. "trial --store") and exits 127, as a
// shell's for a command not found.
func findCompanion(name, what string) (string, error) {
	file := name
	if runtime.GOOS == "windows" {
		file += ".exe"
	}
	self, err := os.Executable()
	if err == nil {
		beside := filepath.Join(filepath.Dir(self), file)
		if st, err := os.Stat(beside); err == nil && !st.IsDir() {
			return beside, nil
		}
	}
	if path, err := exec.LookPath(file); err == nil {
		return path, nil
	}
	return "", &ExitError{Code: ExitCannotRun, Err: fmt.Errorf(
		"%s: %s is not beside %s nor on PATH: install it from the release archive, or: go install github.com/lockctl/lockctl/%s@latest", what, file, self, name)}
}
