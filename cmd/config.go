package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/yamlschema"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Configuration keys. Each is set, in order of precedence, by its flag, by
// LOCKCTL_<KEY> in the environment ("." and "-" become "_", e.g.
// LOCKCTL_REDIS_URL, LOCKCTL_POLICY_LEASE_CAP), by the config file, or by the
// default below (docs/configuration.md).
const (
	keyRedisURL      = "redis.url"
	keyRedisPassword = "redis.password"
	keyRedisTimeout  = "redis.timeout"
	keyOutput        = "output"
	keyNoColor       = "no_color"
	keyLeaseCap      = "policy.lease_cap"
	keyRenewBound    = "policy.renew_bound"
	keyRenewEvery    = "policy.renew_every"
	keyLockField     = "lock.field"
	keyKeyTemplate   = "lock.key_template"
	keyFenceTemplate = "lock.fence_template"
	// keyLayouts is the path of a layouts file (docs/layouts.md, "Layouts you declare").
	keyLayouts = "inspect.layouts"
)

// Connection kinds and TLS (docs/connecting.md). Passwords have no flag
// of their own; one written in --redis is warned about (warnPasswordFlag,
// docs/secrets.md).
const (
	keyRedisSentinel         = "redis.sentinel"
	keyRedisMasterName       = "redis.master_name"
	keyRedisSentinelPassword = "redis.sentinel_password"
	keyRedisCluster          = "redis.cluster"
	keyRedisTLSCA            = "redis.tls_ca"
	keyRedisTLSCert          = "redis.tls_cert"
	keyRedisTLSKey           = "redis.tls_key"
	keyRedisTLSInsecure      = "redis.tls_insecure"
)

var configDefaults = map[string]any{
	keyRedisURL:      "redis://127.0.0.1:6379/0",
	keyRedisPassword: "",
	keyRedisTimeout:  "5s",
	keyOutput:        "table",
	keyNoColor:       false,
	keyLeaseCap:      lockcore.FormatDuration(lockcore.DefaultLeaseCap),
	keyRenewBound:    lockcore.FormatDuration(lockcore.DefaultRenewBound),
	keyRenewEvery:    "",
	keyLockField:     lockcore.DefaultField,
	keyKeyTemplate:   lockcore.DefaultKeyTemplate,
	keyFenceTemplate: "",
	keyLayouts:       "",

	keyRedisSentinel:         "",
	keyRedisMasterName:       "",
	keyRedisSentinelPassword: "",
	keyRedisCluster:          false,
	keyRedisTLSCA:            "",
	keyRedisTLSCert:          "",
	keyRedisTLSKey:           "",
	keyRedisTLSInsecure:      false,

	keyExporterListen:   "127.0.0.1:9477",
	keyExporterPattern:  "lock:*",
	keyExporterInterval: "30s",
	keyExporterScanRate: "0",
}

// viperKey is the flag annotation that ties a flag to a configuration key;
// bindFlags binds the flags of the command being run (and only those, so two
// commands may share a key).
const viperKey = "lockctl_config_key"

func flagConfigKey(fs *pflag.FlagSet, flag, key string) {
	_ = fs.SetAnnotation(flag, viperKey, []string{key})
}

// configRead is the config file one invocation read.
type configRead struct {
	path   string // "" for none
	origin string // originFlag, originDir or originUser
	data   []byte // the content viper read, for the trust check
	keys   *fileKeys
}

// loadConfig builds the configuration for one invocation: defaults, the
// config file (--config, else ./lockctl.yaml, else <user config dir>/lockctl/config.yaml),
// LOCKCTL_* env (read with getenv), and the flags of cmd. It returns the
// file read (path "" for none) with the line of each key it sets.
func loadConfig(cmd *cobra.Command, configFile string, getenv func(string) string) (*viper.Viper, configRead, error) {
	var file configRead
	v := viper.New()
	for k, d := range configDefaults {
		v.SetDefault(k, d)
	}
	if err := checkConfigEnv(getenv); err != nil {
		return nil, file, err
	}
	var bindErr error
	flagged := map[string]bool{} // keys whose flag was given
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		keys, ok := f.Annotations[viperKey]
		if !ok || bindErr != nil {
			return
		}
		// viper takes an empty flag for an unset one and would quietly use
		// the env, file or default value (--key-template "$UNSET").
		if f.Changed && f.Value.Type() == "string" && f.Value.String() == "" {
			bindErr = usageErrorf("--%s is empty; give a value, or leave the flag out for the configured one%s", f.Name, defaultNote(keys[0]))
			return
		}
		bindErr = v.BindPFlag(keys[0], f)
		flagged[keys[0]] = flagged[keys[0]] || f.Changed
	})
	if bindErr != nil {
		return nil, file, bindErr
	}
	// The LOCKCTL_* variables come from getenv, not viper's AutomaticEnv
	// (the process's): Set outranks a flag in viper, so only where no flag
	// was given, keeping flag > env > file > default.
	for k := range configDefaults {
		if val, ok := envValue(getenv, k); ok && !flagged[k] {
			v.Set(k, val)
		}
	}
	file.path, file.origin = configFile, originFlag
	if file.path == "" {
		file.path, file.origin = findConfigFile(getenv)
	}
	if file.path != "" {
		var err error
		if file.data, err = readConfigData(file.path); err != nil {
			return nil, file, err
		}
		if file.keys, err = parseConfigFile(file.path, file.data); err != nil {
			return nil, file, err
		}
		v.SetConfigType("yaml")
		if err := v.ReadConfig(bytes.NewReader(file.data)); err != nil { // parseConfigFile has read it
			return nil, file, usageErrorf("%s:1: %v", file.path, oneLine(err))
		}
	}
	return v, file, nil
}

// readConfigData reads a config file of at most maxInputFile bytes (exit 2
// for a bigger one, or one that cannot be read: readInputFile).
func readConfigData(path string) ([]byte, error) {
	data, err := readInputFile("config file", path, maxInputFile+1)
	if err != nil {
		return nil, err
	}
	if len(data) > maxInputFile {
		return nil, usageErrorf("config file %q is over %d bytes; a config file is a page of YAML", path, maxInputFile)
	}
	return data, nil
}

// envName is the LOCKCTL_* variable of config key k ("." and "-" become
// "_"): redis.tls_insecure → LOCKCTL_REDIS_TLS_INSECURE.
func envName(k string) string {
	return "LOCKCTL_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(k))
}

// envValue is the LOCKCTL_* variable of config key k when it is set and
// not empty. An empty variable counts as unset, as viper's AutomaticEnv
// would read it (LOCKCTL_REDIS_URL= in front of a command drops an exported
// URL): the flag, config file or default decides, and config view says so.
func envValue(getenv func(string) string, k string) (string, bool) {
	val := getenv(envName(k))
	return val, val != ""
}

// checkConfigEnv refuses a LOCKCTL_* variable that sets a true/false key to
// anything strconv.ParseBool does not take (1, t, true, 0, f, false, in any
// case): viper would read LOCKCTL_REDIS_CLUSTER=maybe as false, silently,
// where the same value in a config file is refused.
func checkConfigEnv(getenv func(string) string) error {
	for _, k := range slices.Sorted(maps.Keys(configDefaults)) {
		if _, isBool := configDefaults[k].(bool); !isBool {
			continue
		}
		if val, ok := envValue(getenv, k); ok {
			if _, err := strconv.ParseBool(val); err != nil {
				return usageErrorf("%s is %q; want true or false (or 1 or 0)", envName(k), val)
			}
		}
	}
	return nil
}

// configLimits bound what a config file's YAML may expand to: a "billion
// laughs" file, or an alias of its own anchor, is an error, not a hang.
var configLimits = yamlschema.Limits{MaxValues: 10000, MaxDepth: 50}

// parseConfigFile checks a config file as checklist specs and scenario files
// are checked (yamlschema.Parse: syntax, duplicate keys, aliases), then
// refuses a key lockctl does not know (a typo would otherwise be ignored),
// a list or mapping where a value goes (viper would read it as "" and fall
// back to nothing) and a true/false key set to anything else. Each error is
// one line, "path:LINE: ..." at the offending key. It returns the line of
// each configuration key the file sets (keys lower-cased, as viper reads
// them), for errors about their values, and whether it holds a password.
func parseConfigFile(path string, data []byte) (*fileKeys, error) {
	doc, err := yamlschema.Parse(data, configLimits)
	var syn *yamlschema.SyntaxError
	var probs yamlschema.Problems
	switch {
	case errors.Is(err, yamlschema.ErrEmpty):
		return &fileKeys{lines: map[string]int{}}, nil
	case errors.As(err, &syn):
		return nil, usageErrorf("%s:%d: %s", path, syn.Line, syn.Msg)
	case errors.As(err, &probs):
		p := probs[0]
		msg, ok := p.ParseMessage("configuration", configLimits)
		switch {
		case p.Keyword == "duplicate": // a config file has keys, not fields
			msg = fmt.Sprintf("%s: duplicate key (first on line %v)", p.Field(), p.Params["first"])
		case !ok: // Parse checks no schema: not reached
			msg = fmt.Sprintf("%s: %s", p.Field(), p.Keyword)
		}
		return nil, usageErrorf("%s:%d: %s", path, p.Line, msg)
	case err != nil:
		return nil, usageErrorf("config file %q: %v", path, err)
	}
	c := &configChecker{doc: doc, keys: fileKeys{lines: map[string]int{}}}
	switch top := doc.Value.(type) {
	case nil:
	case map[string]any:
		c.mapping(top, nil, "")
	default:
		c.problem(1, "the config file is a %s; want a mapping with %s", yamlKind(top), strings.Join(configSubkeys(""), ", "))
	}
	if c.err != "" {
		return nil, usageErrorf("%s:%d: %s", path, c.errLine, c.err)
	}
	return &c.keys, nil
}

// fileKeys are what a config file sets.
type fileKeys struct {
	lines    map[string]int // the line of each configuration key set
	password bool           // redis.password or redis.sentinel_password set, or a password in redis.url
}

// configChecker walks a config file's values, keeping the first problem in
// file order.
type configChecker struct {
	doc     *yamlschema.Document
	keys    fileKeys
	err     string
	errLine int
}

func (c *configChecker) problem(line int, format string, args ...any) {
	if c.err == "" || line < c.errLine {
		c.err, c.errLine = fmt.Sprintf(format, args...), line
	}
}

// mapping checks the entries of m, found at p in the document; prefix is
// its configuration key with a trailing "." ("" for the document).
func (c *configChecker) mapping(m map[string]any, p yamlschema.Path, prefix string) {
	first := map[string]int{} // lower-cased key → line, as viper folds case
	for name, val := range m {
		q := append(slices.Clip(p), name)
		line := c.doc.Line(q)
		k := prefix + strings.ToLower(name)
		if l, dup := first[k]; dup {
			c.problem(max(l, line), "%s: duplicate key (first on line %d; keys are not case-sensitive)", k, min(l, line))
			continue
		}
		first[k] = line
		if d, ok := configDefaults[k]; ok {
			c.keys.lines[k] = line
			c.value(k, d, val, line)
			if str, _ := val.(string); str != "" && (secretKeys[k] || k == keyRedisURL && urlHasPassword(str)) {
				c.keys.password = true
			}
			continue
		}
		if sub := configSubkeys(k); len(sub) > 0 {
			switch x := val.(type) {
			case nil:
			case map[string]any:
				c.mapping(x, q, k+".")
			default:
				c.problem(line, "%s is a %s; want a mapping with %s", k, yamlKind(val), strings.Join(sub, ", "))
			}
			continue
		}
		if section, _, nested := strings.Cut(k, "."); nested {
			if inSection := configSubkeys(section); len(inSection) > 0 {
				c.problem(line, "unknown key %s; accepted in %s: %s", k, section, strings.Join(inSection, ", "))
				continue
			}
		}
		c.problem(line, "unknown key %s; accepted: %s", k, strings.Join(slices.Sorted(maps.Keys(configDefaults)), ", "))
	}
}

// value checks the value of configuration key k (default d).
func (c *configChecker) value(k string, d, val any, line int) {
	switch val.(type) {
	case nil:
		return
	case []any:
		if k == keyRedisSentinel { // host:port entries, as a list or comma-separated
			return
		}
		c.problem(line, "%s is a %s; want %s", k, yamlKind(val), configWant(k, d))
		return
	case map[string]any:
		c.problem(line, "%s is a %s; want %s", k, yamlKind(val), configWant(k, d))
		return
	}
	if _, want := d.(bool); want {
		if _, ok := val.(bool); !ok {
			c.problem(line, "%s is %v; want true or false", k, val)
		}
	}
}

// configExamples are examples of the keys whose default is empty, for a
// message: the default itself is the example of the others.
var configExamples = map[string]string{
	keyRenewEvery: "a duration, such as 20s", keyFenceTemplate: "a template, such as {key}:fence",
	keyLayouts: "a path, such as layouts.yaml", keyRedisMasterName: "a name, such as mymaster",
	keyRedisTLSCA: "a path, such as ca.pem", keyRedisTLSCert: "a path, such as client.pem",
	keyRedisTLSKey: "a path, such as client-key.pem",
}

// configWant is what key k (default d) takes, for a message: "a value such
// as 1m", "a path, such as layouts.yaml", or "text".
func configWant(k string, d any) string {
	if ex, ok := configExamples[k]; ok {
		return ex
	}
	if d == "" {
		return "text"
	}
	return fmt.Sprintf("a value such as %v", d)
}

// configSubkeys lists, sorted, the keys under section ("" for all the
// top-level names): "policy" → lease_cap, renew_bound, renew_every.
func configSubkeys(section string) []string {
	var sub []string
	for c := range configDefaults {
		if section == "" {
			name, _, _ := strings.Cut(c, ".")
			if !slices.Contains(sub, name) {
				sub = append(sub, name)
			}
		} else if rest, ok := strings.CutPrefix(c, section+"."); ok {
			sub = append(sub, rest)
		}
	}
	slices.Sort(sub)
	return sub
}

func yamlKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "mapping"
	case []any:
		return "list"
	}
	return "single value"
}

// defaultNote is " (default X)" for a configuration key with a non-empty
// default, else "".
func defaultNote(key string) string {
	if d, ok := configDefaults[key].(string); ok && d != "" {
		return " (default " + d + ")"
	}
	return ""
}

// findConfigFile is the config file used without --config and where it
// is (originDir, originUser): ./lockctl.yaml, else the user's own; "" for none.
func findConfigFile(getenv func(string) string) (string, string) {
	if _, err := os.Stat(localConfig); err == nil {
		return localConfig, originDir
	}
	if dir := userConfigDir(getenv); dir != "" {
		p := filepath.Join(dir, "lockctl", "config.yaml")
		if _, err := os.Stat(p); err == nil {
			return p, originUser
		}
	}
	return "", ""
}

// userConfigDir is os.UserConfigDir with the variables read by getenv
// (its rules: %AppData% on Windows, $HOME/Library/Application Support on
// macOS, else an absolute $XDG_CONFIG_HOME or $HOME/.config), "" for none.
func userConfigDir(getenv func(string) string) string {
	switch runtime.GOOS {
	case "windows":
		return getenv("AppData")
	case "darwin", "ios":
		if home := getenv("HOME"); home != "" {
			return home + "/Library/Application Support"
		}
		return ""
	case "plan9":
		if home := getenv("home"); home != "" {
			return home + "/lib"
		}
		return ""
	}
	if dir := getenv("XDG_CONFIG_HOME"); dir != "" {
		if !filepath.IsAbs(dir) {
			return ""
		}
		return dir
	}
	if home := getenv("HOME"); home != "" {
		return home + "/.config"
	}
	return ""
}

// oneLine is err's text as one line of printable text: whitespace runs
// (line breaks too) become one space, and control bytes in data (a server's
// error, a key) are escaped (oneLineText).
func oneLine(err error) string {
	return oneLineText(strings.Join(strings.Fields(err.Error()), " "))
}

// settingSource is where key's effective value comes from: "flag", "env",
// "file" or "default" (precedence in that order; cmd's flags bound with
// bindFlag, f's config file or none). An empty LOCKCTL_* variable is not a
// source (envValue).
func (f *Factory) settingSource(cmd *cobra.Command, key string) string {
	changed := false
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if keys, ok := fl.Annotations[viperKey]; ok && keys[0] == key && fl.Changed {
			changed = true
		}
	})
	_, envSet := envValue(f.IO.getenv, key)
	switch {
	case changed:
		return "flag"
	case envSet:
		return "env"
	case f.ConfigPath != "" && f.Config.InConfig(key):
		return "file"
	}
	return "default"
}

// settingName names key in an error by where its value came from: its
// LOCKCTL_* variable, "file:LINE: key" for the config file, else flag (the flag's
// name, for a value given there or the default).
func (f *Factory) settingName(key, flag string) string {
	switch f.settingSource(f.cmd, key) {
	case "env":
		return envName(key)
	case "file":
		line := 1
		if f.configKeys != nil {
			line = max(f.configKeys.lines[key], 1)
		}
		return fmt.Sprintf("%s:%d: %s", f.ConfigPath, line, key)
	}
	return flag
}

// durationSetting reads a duration configuration value, naming where it
// came from (settingName: flag, variable or file key) and the value when it
// does not parse or is not positive.
func (f *Factory) durationSetting(key, flag string) (time.Duration, error) {
	d, err := lockcore.ParsePositiveDuration(f.Config.GetString(key))
	if err != nil {
		return 0, usageErrorf("%s %s", f.settingName(key, flag), err)
	}
	return d, nil
}

// policySetting returns the lease policy from policy.lease_cap,
// policy.renew_bound and policy.renew_every (policyFields).
func (f *Factory) policySetting() (lockcore.Policy, error) {
	p := lockcore.DefaultPolicy()
	for _, pf := range policyFields(&p) {
		if err := f.setPolicyField(pf); err != nil {
			return p, err
		}
	}
	return p, nil
}

// policyField is one duration setting of the lease policy: its config key,
// its flag and the field of a Policy it sets.
type policyField struct {
	key, flag string
	dst       *time.Duration
}

// policyFields are the duration settings of p.
func policyFields(p *lockcore.Policy) []policyField {
	return []policyField{{keyLeaseCap, "lease-cap", &p.LeaseCap}, {keyRenewBound, "renew-bound", &p.RenewBound}, {keyRenewEvery, "renew-every", &p.RenewEvery}}
}

// setPolicyField reads pf's setting into its field (durationSetting); an
// unset renew_every ("") leaves it, lease/3.
func (f *Factory) setPolicyField(pf policyField) error {
	if pf.key == keyRenewEvery && f.Config.GetString(pf.key) == "" {
		return nil
	}
	d, err := f.durationSetting(pf.key, pf.flag)
	if err == nil {
		*pf.dst = d
	}
	return err
}

// keySpecSetting returns the key templates from lock.field, lock.key_template
// and lock.fence_template.
func (f *Factory) keySpecSetting(cluster bool) (*lockcore.KeySpec, error) {
	if err := f.requireTrust("lock."); err != nil {
		return nil, err
	}
	v := f.Config
	ks, err := lockcore.NewKeySpec(v.GetString(keyLockField), v.GetString(keyKeyTemplate), v.GetString(keyFenceTemplate), cluster)
	if err != nil {
		return nil, f.templateError(err, v.GetString(keyKeyTemplate), cluster)
	}
	return ks, nil
}

// templateError is err, a lockcore.NewKeySpec error, as an exit-2 error
// that names where the template at fault came from when that is the config
// file or a variable (settingName). templateFault says which it is.
func (f *Factory) templateError(err error, keyTemplate string, cluster bool) error {
	key, flag := f.templateFault(keyTemplate, cluster)
	if src := f.settingSource(f.cmd, key); src == "env" || src == "file" {
		return usageErrorf("%s: %v", f.settingName(key, flag), err)
	}
	return usageErrorf("%v", err)
}

// templateFault is the config key and flag of the template a failed
// lockcore.NewKeySpec is about: the key template if it fails with the
// default fence template, else the fence template.
func (f *Factory) templateFault(keyTemplate string, cluster bool) (key, flag string) {
	if _, err := lockcore.NewKeySpec(f.Config.GetString(keyLockField), keyTemplate, "", cluster); err != nil {
		return keyKeyTemplate, "key-template"
	}
	return keyFenceTemplate, "fence-template"
}

// keysFor builds the lock and fence keys of one business value (what names
// it in errors: `value "a}b"` or `--key "k"`). It refuses, exit 2, a fence
// key equal to the lock key (a fixed --fence-template). On a cluster it refuses, exit
// 2, keys on two hash slots: a '{' or '}' in the value can move the hash tag
// of the default templates (lockcore.KeySpec.Keys), and the acquire script
// would then fail with CROSSSLOT. Every command that builds keys from a value
// goes through here.
func keysFor(ks *lockcore.KeySpec, value, what string, cluster bool) (lockcore.Keys, error) {
	k := ks.Keys(value)
	// NewKeySpec checks the templates on a probe value; a fixed fence key can
	// still be this lock's own key.
	if k.Lock == k.Fence {
		return k, usageErrorf("%s: the fence counter would be the lock key itself (%q), so the acquire would INCR the lock and the release delete the counter; give --fence-template a key of its own, e.g. \"{key}:fence\"", what, k.Lock)
	}
	if cluster {
		if err := k.SameSlot(); err != nil {
			return k, usageErrorf("%s cannot be locked in a Redis Cluster: %v (a { or } in it changes the part of the key Redis hashes)", what, err)
		}
	}
	return k, nil
}

// failOnAliases says, in --fail-on's help, that inspect's and checklist's
// words are one vocabulary: inspect ranks findings error and warning,
// checklist items fail and warn.
const failOnAliases = "error and fail, warning and warn are the same level"

// failOnLevel reads --fail-on in either command's words (failOnAliases):
// atWarn is true for warning or warn, false for error or fail. The error
// names the command's own two words (errWord, warnWord) first.
func failOnLevel(value, errWord, warnWord string) (atWarn bool, err error) {
	switch value {
	case "error", "fail":
		return false, nil
	case "warning", "warn":
		return true, nil
	}
	return false, usageErrorf("fail-on %q is not one of %s, %s (%s)", value, errWord, warnWord, failOnAliases)
}

// choice checks a value against the accepted ones.
func choice(name, value string, accepted ...string) error {
	for _, a := range accepted {
		if value == a {
			return nil
		}
	}
	return usageErrorf("%s %q is not one of %s", name, value, strings.Join(accepted, ", "))
}

// addPolicyFlags adds the policy flags named (all of --lease-cap,
// --renew-bound and --renew-every when none is), bound to the policy.*
// configuration keys (policyFields).
func addPolicyFlags(cmd *cobra.Command, names ...string) {
	usage := map[string]string{
		"lease-cap":   "longest single lease of a renewable lock (default 60s)",
		"renew-bound": "renewals keep a trusted lock at most max(budget, this) (default 12h)",
		"renew-every": "renewal interval (default lease/3)",
	}
	for _, pf := range policyFields(&lockcore.Policy{}) {
		if len(names) == 0 || slices.Contains(names, pf.flag) {
			cmd.Flags().String(pf.flag, "", usage[pf.flag])
			flagConfigKey(cmd.Flags(), pf.flag, pf.key)
		}
	}
}

// addKeyFlags adds --field, --key-template and --fence-template, bound to
// the lock.* configuration keys.
func addKeyFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.String("field", "", "request field name the key template uses (default OrderId)")
	flagConfigKey(fl, "field", keyLockField)
	fl.String("key-template", "", "lock key template: {field}, {value}, {{ }} for a hash tag (default lock:{field}:{value})")
	flagConfigKey(fl, "key-template", keyKeyTemplate)
	fl.String("fence-template", "", "fence counter key template: {key}, {key%SUFFIX} (the lock key without SUFFIX: {key%:Lease}:FencingToken), {value}, {field}, or a fixed key; {{ }} is a literal brace (default {<lock key>}:fence)")
	flagConfigKey(fl, "fence-template", keyFenceTemplate)
}
