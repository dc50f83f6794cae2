package cmd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// Where a config file came from (Factory.configOrigin).
const (
	originFlag = "flag" // --config: the user named it
	originDir  = "dir"  // ./lockctl.yaml, found in the current directory
	originUser = "user" // <user config dir>/lockctl/config.yaml
)

// localConfig is the file lockctl looks for in the current directory.
const localConfig = "lockctl.yaml"

// guardedKey reports whether a directory-local config file may set key
// only once trusted: where lockctl connects (and so where a password from
// the environment goes), which keys it locks, and how long run holds them
// (lease, simulate and inspect only compute with the policy: not guarded).
// The rule is git's safe.directory and direnv's allow: a checkout someone
// else wrote must not choose these silently (issue 33).
func guardedKey(key string) bool {
	switch key {
	case keyRedisPassword, keyRedisSentinelPassword, keyRedisTimeout:
		return false // the file's own secret, or how long to wait: harmless
	}
	return strings.HasPrefix(key, "redis.") || strings.HasPrefix(key, "lock.") || strings.HasPrefix(key, "policy.")
}

// requireTrust refuses, exit 2, to use the guarded settings (guardedKey)
// under the sections named (e.g. "redis.") when an untrusted
// ./lockctl.yaml sets one that no flag or variable overrides. It reads the
// trust store only then: a command that uses none of them (version) reads
// no more than before. The error names every guarded key the file sets,
// its hint how to trust the file.
func (f *Factory) requireTrust(sections ...string) error {
	if f.configOrigin != originDir || f.trusted || f.viewing {
		return nil
	}
	var set []string // every guarded key in force, to say all the file would change
	used := false
	for k := range f.configKeys.lines {
		if guardedKey(k) && f.settingSource(f.cmd, k) == "file" {
			set = append(set, k)
			used = used || slices.ContainsFunc(sections, func(s string) bool { return strings.HasPrefix(k, s) })
		}
	}
	if !used {
		return nil
	}
	ok, err := isTrusted(userConfigDir(f.IO.getenv), f.ConfigPath, f.configData)
	if err != nil {
		return err
	}
	if f.trusted = ok; ok {
		return nil
	}
	slices.Sort(set)
	return &ExitError{Code: ExitUsage,
		Err:  fmt.Errorf("%s in the current directory sets %s, but it is not trusted (a checkout may hold anyone's settings)", f.ConfigPath, strings.Join(set, ", ")),
		Hint: fmt.Sprintf("Read it, then run 'lockctl config trust' to use it as it is now, or pass --config %s.", f.ConfigPath)}
}

// trustWord is "trusted" or "untrusted" for a file found in the current
// directory, "" for any other (config view).
func (f *Factory) trustWord() (string, error) {
	if f.configOrigin != originDir {
		return "", nil
	}
	ok, err := isTrusted(userConfigDir(f.IO.getenv), f.ConfigPath, f.configData)
	if ok || err != nil {
		return "trusted", err
	}
	return "untrusted", nil
}

// configNotices says on stderr which file is used when lockctl found it in
// the current directory (--config is on the command line already; the
// user's own file needs no word), and warns when a file holding a password
// is readable by group or others. Completion stays quiet.
func (f *Factory) configNotices() {
	if f.ConfigPath == "" || f.completing() || f.handedOver {
		return
	}
	if f.configOrigin == originDir {
		fmt.Fprintf(f.IO.ErrOut, "lockctl: using %s from the current directory\n", f.ConfigPath)
	}
	if runtime.GOOS == "windows" || f.configKeys == nil || !f.configKeys.password {
		return
	}
	if fi, err := os.Stat(f.ConfigPath); err == nil && fi.Mode().Perm()&0o044 != 0 {
		fmt.Fprintf(f.IO.ErrOut, "lockctl: warning: %s holds a password and is readable by group or others (mode %04o); chmod 600 %s\n",
			f.ConfigPath, fi.Mode().Perm(), f.ConfigPath)
	}
}

// completing reports whether this is a shell completion request, whose
// stderr would garble the prompt.
func (f *Factory) completing() bool {
	return len(f.args) > 0 && (f.args[0] == cobra.ShellCompRequestCmd || f.args[0] == cobra.ShellCompNoDescRequestCmd)
}

// trustStore is the file `config trust` writes: <user config dir>/lockctl/trusted.json.
func trustStore(dir string) string { return filepath.Join(dir, "lockctl", "trusted.json") }

// trustEntries are the trusted config files: absolute path → sha256 of the
// content trusted (hex), as direnv allow keeps them: a changed file is
// untrusted again.
type trustEntries map[string]string

// readTrust reads the trust store in dir (the user config dir); a missing
// store is empty. Errors: exit 2 for a store that does not parse.
func readTrust(dir string) (trustEntries, error) {
	m := trustEntries{}
	if dir == "" {
		return m, nil
	}
	b, err := os.ReadFile(trustStore(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, usageErrorf("trust store %q: %v", trustStore(dir), unwrapPathError(err))
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, usageErrorf("trust store %q does not parse (%v); remove it and trust the files again", trustStore(dir), err)
	}
	return m, nil
}

// writeTrust replaces the trust store in dir with m, readable by the user
// alone, through a rename so a reader never sees half a file.
func writeTrust(dir string, m trustEntries) error {
	p := trustStore(dir)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return usageErrorf("trust store %q: %v", p, unwrapPathError(err))
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".trusted-*.json")
	if err != nil {
		return usageErrorf("trust store %q: %v", p, unwrapPathError(err))
	}
	_, werr := tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), p)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return usageErrorf("trust store %q: %v", p, unwrapPathError(werr))
	}
	return nil
}

// trustKey is path as the trust store names it: absolute, symlinks resolved.
func trustKey(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", usageErrorf("config file %q: %v", path, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return abs, nil
}

func contentHash(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// isTrusted reports whether the file at path, read as data, was trusted
// with this very content.
func isTrusted(dir, path string, data []byte) (bool, error) {
	key, err := trustKey(path)
	if err != nil {
		return false, err
	}
	m, err := readTrust(dir)
	if err != nil {
		return false, err
	}
	return m[key] == contentHash(data), nil
}

// newCmdConfigTrust returns `lockctl config trust [FILE]`, or with
// untrust, `lockctl config untrust [FILE]`.
func newCmdConfigTrust(f *Factory, untrust bool) *cobra.Command {
	use, short := "trust [FILE]", "Trust a config file's connection and lock settings as they are"
	if untrust {
		use, short = "untrust [FILE]", "Forget that a config file was trusted"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `.

A lockctl.yaml that lockctl finds in the current directory may set where it
connects (and so where a password from LOCKCTL_REDIS_PASSWORD or
REDISCLI_AUTH goes), the lock key templates and the lease policy only once
trusted; a file given with --config, or the user's own config file, is
always trusted. config trust records FILE (default ./lockctl.yaml) with the
sha256 of its content in <user config dir>/lockctl/trusted.json: once the
file changes it is untrusted again. Read the file before trusting it.`,
		Example: "  lockctl config trust\n  lockctl config trust ../app/lockctl.yaml\n  lockctl config untrust",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			path := localConfig
			if len(args) == 1 {
				path = args[0]
			}
			return configTrustRun(f, path, untrust)
		},
	}
}

// configTrustRun records (or, with untrust, removes) path in the trust
// store. Errors: exit 2 for a file that is missing, too big or not a valid
// config file (only one lockctl would use can be trusted), or no user
// config dir.
func configTrustRun(f *Factory, path string, untrust bool) error {
	dir := userConfigDir(f.IO.getenv)
	if dir == "" {
		return usageErrorf("no user config dir to keep trusted files in: set HOME (or XDG_CONFIG_HOME); or pass --config %s", path)
	}
	key, err := trustKey(path)
	if err != nil {
		return err
	}
	m, err := readTrust(dir)
	if err != nil {
		return err
	}
	if untrust {
		if _, ok := m[key]; !ok {
			fmt.Fprintf(f.IO.Out, "%s was not trusted\n", key)
			return nil
		}
		delete(m, key)
		if err := writeTrust(dir, m); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.Out, "untrusted %s\n", key)
		return nil
	}
	data, err := readConfigData(path)
	if err != nil {
		return err
	}
	if _, err := parseConfigFile(path, data); err != nil {
		return err
	}
	m[key] = contentHash(data)
	if err := writeTrust(dir, m); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.Out, "trusted %s (sha256 %.12s); a change to it makes it untrusted again\n", key, m[key])
	return nil
}
