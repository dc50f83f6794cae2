package cmd

import (
	"os"
	"sort"
	"strings"

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
}

// ConfigView is the JSON shape of `lockctl config view`.
type ConfigView struct {
	// ConfigFile is the file that was read, or "" when none was found.
	ConfigFile string          `json:"config_file"`
	Settings   []ConfigSetting `json:"settings"`
}

// ConfigViewOptions are the inputs of `lockctl config view`.
type ConfigViewOptions struct {
	Printer *Printer
	View    ConfigView
}

// NewCmdConfig returns `lockctl config` with its `view` subcommand.
func NewCmdConfig(f *Factory, runF func(*ConfigViewOptions) error) *cobra.Command {
	cfg := &cobra.Command{
		Use:   "config",
		Short: "Show lockctl's effective configuration",
		Args:  cobra.NoArgs,
	}
	view := &cobra.Command{
		Use:         "view",
		Annotations: outputFormats(dataFormats),
		Short:       "Show every setting, its effective value and where it came from (flag, env, file, default)",
		Long: `Show every setting, its effective value and where it came from.

Precedence: flag > LOCKCTL_* environment variable > config file (--config,
else ./lockctl.yaml, else <user config dir>/lockctl/config.yaml) > default.
Passwords are shown as *** and URLs are redacted.`,
		Example: `  lockctl config view
  LOCKCTL_POLICY_LEASE_CAP=45s lockctl config view -o json
  lockctl --config team.yaml --redis redis://cache:6379/2 config view`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := f.Output(dataFormats...)
			if err != nil {
				return err
			}
			opts := &ConfigViewOptions{Printer: f.newPrinter(format), View: f.effectiveConfig(cmd)}
			if runF != nil {
				return runF(opts)
			}
			return configViewRun(opts)
		},
	}
	cfg.AddCommand(view)
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
	for _, k := range keys {
		s := ConfigSetting{Key: k, Value: f.Config.GetString(k), Source: settingSource(cmd, f.Config, f.ConfigPath, k), Env: envName(k)}
		if k == keyRedisSentinel { // a string or a YAML list
			s.Value = strings.Join(listSetting(f.Config, k), ",")
		}
		if k == keyRedisPassword && s.Value == "" && os.Getenv("REDISCLI_AUTH") != "" {
			s.Value, s.Source = os.Getenv("REDISCLI_AUTH"), "env"
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

func configViewRun(opts *ConfigViewOptions) error {
	v := opts.View
	return opts.Printer.Print(v, func(t *TableView) {
		file := v.ConfigFile
		if file == "" {
			file = "(none found)"
		}
		t.Line("config file: %s", file)
		t.Line("")
		t.Table(configRows(v))
	})
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
