package cmd

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// Set by ldflags at release time (see .goreleaser.yaml):
// -X github.com/lockctl/lockctl/cmd.version=... (and commit, date).
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

// VersionInfo is the JSON shape of `lockctl version -o json`.
type VersionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// VersionOptions are the inputs of `lockctl version`.
type VersionOptions struct {
	Printer *Printer
}

// NewCmdVersion returns `lockctl version`; runF replaces the run function in tests.
func NewCmdVersion(f *Factory, runF func(*VersionOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:         "version",
		Annotations: outputFormats(dataFormats),
		Short:       "Print lockctl's version, commit, build date and Go version",
		Example:     "  lockctl version\n  lockctl version -o json",
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := f.Output(dataFormats...)
			if err != nil {
				return err
			}
			opts := &VersionOptions{Printer: f.newPrinter(format)}
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
}

func versionRun(opts *VersionOptions) error {
	v := currentVersion()
	return opts.Printer.Print(v, func(t *TableView) {
		t.Line("%s", versionLine(v))
	})
}

func currentVersion() VersionInfo {
	return VersionInfo{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

// versionLine is the line `lockctl version` and `lockctl --version` print.
func versionLine(v VersionInfo) string {
	return fmt.Sprintf("lockctl %s (commit %s, built %s, %s, %s)", v.Version, v.Commit, v.Date, v.GoVersion, v.Platform)
}
