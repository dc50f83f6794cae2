package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

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
	v := VersionInfo{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok && version == "dev" {
		v = fromBuildInfo(v, bi)
	}
	return v
}

// fromBuildInfo fills what ldflags did not set (a build by go install
// ...@v1.2.0 or go build, not by goreleaser) from what the Go toolchain
// records in the binary: the module version (v1.2.0, or a pseudo-version
// such as v0.0.0-20261201120000-9c47469abcde+dirty) and, for a build in a
// git checkout, vcs.revision and vcs.time (RFC 3339, UTC).
func fromBuildInfo(v VersionInfo, bi *debug.BuildInfo) VersionInfo {
	if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
		v.Version = mv
	}
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision" && v.Commit == "none":
			v.Commit = s.Value[:min(len(s.Value), 7)] // as goreleaser's ShortCommit
		case s.Key == "vcs.time" && v.Date == "unknown":
			v.Date = s.Value
		}
	}
	return v
}

// versionLine is the line `lockctl version` and `lockctl --version` print.
func versionLine(v VersionInfo) string {
	return fmt.Sprintf("lockctl %s (commit %s, built %s, %s, %s)", v.Version, v.Commit, v.Date, v.GoVersion, v.Platform)
}
