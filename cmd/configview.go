package cmd

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/lockctl/lockctl/lockcore"
	"github.com/spf13/cobra"
)

// ConfigSetting is one effective configuration value and where it came from.
type ConfigSetting struct {
	Key string `json:"key"`
	// Value is the effective value; secrets are "***" and URLs are redacted.
	Value string `json:"value"`
	// Source is flag, env, file or default.
	Source string `json:"source"`
	// Env is the environment variable that sets the key.
	Env string `json:"env"`
	// Problem is why the commands that read the key refuse its value, in
	// their words (naming the flag, variable or file:line); absent when
	// the value is accepted.
	Problem string `json:"problem,omitempty"`
}

// ConfigView is the JSON shape of `lockctl config view`.
type ConfigView struct {
	// ConfigFile is the file that was read, or "" when none was found.
	ConfigFile string `json:"config_file"`
	// Trust is "trusted" or "untrusted" for a file found in the current
	// directory (lockctl config trust), absent for any other.
	Trust    string          `json:"trust,omitempty"`
	Settings []ConfigSetting `json:"settings"`
}

// ConfigViewOptions are the inputs of `lockctl config view`.
type ConfigViewOptions struct {
	Printer *Printer
	// ErrOut gets one line for each setting with a Problem.
	ErrOut io.Writer
	View   ConfigView
}

// NewCmdConfig returns `lockctl config` with its `view` subcommand.
func NewCmdConfig(f *Factory, runF func(*ConfigViewOptions) error) *cobra.Command {
	cfg := &cobra.Command{
		Use:     "config",
		Short:   "Show the effective configuration; trust a directory's file",
		Example: "  lockctl config view\n  lockctl config trust",
		Args:    cobra.NoArgs,
	}
	view := &cobra.Command{
		Use:         "view",
		Annotations: outputFormats(dataFormats),
		Short:       "Show every setting, its value and its source (flag, env, file)",
		Long: `Show every setting, its effective value and where it came from.

Precedence: flag > LOCKCTL_* environment variable > config file (--config,
else ./lockctl.yaml, else <user config dir>/lockctl/config.yaml) > default.
Passwords are shown as *** and URLs are redacted. An empty LOCKCTL_*
variable counts as unset.

Every setting is shown, even one the commands would refuse (a duration
without a unit, an output format no command has, a key template without
{value}, connection settings that do not parse): each such setting gets a
line on stderr saying why, in the words the commands use, and config view
then exits 2.`,
		Example: `  lockctl config view
  LOCKCTL_POLICY_LEASE_CAP=45s lockctl config view -o json
  lockctl --config team.yaml --redis redis://cache:6379/2 config view`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := f.Output(dataFormats...)
			if err != nil {
				// config view is how a bad configured format is found:
				// it shows it as a problem; only -o itself must be valid.
				if f.settingSource(cmd, keyOutput) == "flag" {
					return err
				}
				format = formatTable
			}
			// It shows an untrusted file's settings, to be read before
			// trusting it; it connects nowhere.
			f.viewing = true
			view := f.effectiveConfig(cmd)
			if view.Trust, err = f.trustWord(); err != nil {
				return err
			}
			opts := &ConfigViewOptions{Printer: f.newPrinter(format), ErrOut: f.IO.ErrOut, View: view}
			if runF != nil {
				return runF(opts)
			}
			return configViewRun(opts)
		},
	}
	cfg.AddCommand(view, newCmdConfigTrust(f, false), newCmdConfigTrust(f, true))
	return cfg
}

// secretKeys are shown as *** when set.
var secretKeys = map[string]bool{keyRedisPassword: true, keyRedisSentinelPassword: true}

func (f *Factory) effectiveConfig(cmd *cobra.Command) ConfigView {
	keys := make([]string, 0, len(configDefaults))
	for k := range configDefaults {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	view := ConfigView{ConfigFile: f.ConfigPath, Settings: make([]ConfigSetting, 0, len(keys))}
	problems := f.settingProblems()
	for _, k := range keys {
		s := ConfigSetting{Key: k, Value: f.Config.GetString(k), Source: f.settingSource(cmd, k), Env: envName(k), Problem: problems[k]}
		if k == keyRedisSentinel { // a string or a YAML list
			addrs := listSetting(f.Config, k)
			for i, a := range addrs { // a URL given as an address may hold a password
				addrs[i] = RedactURL(a)
			}
			s.Value = strings.Join(addrs, ",")
		}
		if auth := f.IO.getenv(redisCLIAuth); k == keyRedisPassword && s.Value == "" && auth != "" {
			s.Value, s.Source = auth, "env"
			s.Env = "REDISCLI_AUTH"
		}
		switch {
		case secretKeys[k] && s.Value != "":
			s.Value = "***"
		case k == keyRedisURL:
			s.Value = RedactURL(s.Value)
		}
		view.Settings = append(view.Settings, s)
	}
	return view
}

// settingProblems checks the values the commands parse when they use them
// (durations, the output format, key templates, the connection settings)
// and returns, by key, the error a command would give; viper keeps them as
// text until then.
func (f *Factory) settingProblems() map[string]string {
	out := map[string]string{}
	var p lockcore.Policy
	for _, pf := range policyFields(&p) {
		if err := f.setPolicyField(pf); err != nil {
			out[pf.key] = err.Error()
		}
	}
	if _, err := f.durationSetting(keyRedisTimeout, "timeout"); err != nil {
		out[keyRedisTimeout] = err.Error()
	}
	if o := f.Config.GetString(keyOutput); !slices.Contains(allFormats, o) {
		out[keyOutput] = fmt.Sprintf("%s %q is no command's output format; accepted: %s", f.settingName(keyOutput, "output"), o, strings.Join(allFormats, ", "))
	}
	// The connection settings as a whole (URL, Sentinel, TLS files), as
	// every command that connects checks them: shown on redis.url.
	if err := f.checkConnSettings(); err != nil && out[keyRedisTimeout] == "" {
		out[keyRedisURL] = err.Error()
	}
	if _, err := f.keySpecSetting(false); err != nil {
		key, _ := f.templateFault(f.Config.GetString(keyKeyTemplate), false)
		out[key] = err.Error()
	}
	return out
}

func configViewRun(opts *ConfigViewOptions) error {
	v := opts.View
	err := opts.Printer.Print(v, func(t *TableView) {
		file := v.ConfigFile
		if file == "" {
			file = "(none found)"
		}
		if v.Trust != "" {
			file += " (current directory, " + v.Trust + ")"
		}
		t.Line("config file: %s", file)
		t.Line("")
		t.Table(configRows(v))
	})
	if err != nil {
		return err
	}
	bad := 0
	for _, s := range v.Settings {
		if s.Problem != "" {
			fmt.Fprintf(opts.ErrOut, "lockctl: %s\n", oneLineText(s.Problem))
			bad++
		}
	}
	if bad > 0 {
		return &ExitError{Code: ExitUsage} // the lines above said why
	}
	return nil
}

// configRows is the pure row builder of the config view table.
func configRows(v ConfigView) ([]string, [][]string) {
	rows := make([][]string, 0, len(v.Settings))
	for _, s := range v.Settings {
		val := s.Value
		if val == "" {
			val = `""`
		}
		rows = append(rows, []string{s.Key, val, s.Source, s.Env})
	}
	return []string{"key", "value", "source", "env"}, rows
}
