package cmd

import (
	"runtime/debug"
	"testing"
)

// TestFromBuildInfo: a build without ldflags (go install ...@v1.2.0, go
// build in a checkout) reports what the toolchain recorded; ldflags win.
func TestFromBuildInfo(t *testing.T) {
	dev := VersionInfo{Version: "dev", Commit: "none", Date: "unknown"}
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "9c47469abcdef0123"}, {Key: "vcs.time", Value: "2026-12-01T17:34:50Z"}}
	for _, c := range []struct {
		name string
		in   VersionInfo
		bi   debug.BuildInfo
		want VersionInfo
	}{
		{"go install @version", dev, debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, VersionInfo{Version: "v1.2.0", Commit: "none", Date: "unknown"}},
		{"go build in a checkout", dev, debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201173450-9c47469abcde+dirty"}, Settings: vcs},
			VersionInfo{Version: "v0.0.0-20261201173450-9c47469abcde+dirty", Commit: "9c47469", Date: "2026-12-01T17:34:50Z"}},
		{"go run, no vcs", dev, debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, dev},
		{"ldflags commit and date", VersionInfo{Version: "dev", Commit: "abc", Date: "2026-11-29"}, debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}, Settings: vcs},
			VersionInfo{Version: "v1.2.0", Commit: "abc", Date: "2026-11-29"}},
	} {
		if got := fromBuildInfo(c.in, &c.bi); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
