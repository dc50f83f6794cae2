package cmd

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/simulate"
	"github.com/spf13/cobra"
)

// Shell completion beyond what Cobra derives from the command tree: scenario
// names, and (opt-in, bounded) lock values read from Redis.

// completeScenarios completes simulate's SCENARIO argument with the built-in
// names and their one-line descriptions.
func completeScenarios(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, b := range simulate.Builtins() {
		out = append(out, b.Name+"\t"+firstClause(b.Description))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// firstClause is s up to its first ";" or end of sentence: a shell shows
// a completion's description on one line.
func firstClause(s string) string {
	end := len(s)
	for _, sep := range []string{";", ". "} {
		if i := strings.Index(s, sep); i >= 0 && i < end {
			end = i
		}
	}
	return strings.TrimSuffix(s[:end], ".")
}

// Key completion reads Redis, so it is off unless LOCKCTL_COMPLETE_KEYS=1,
// and bounded: at most keyCompletionScans SCAN calls of keyCompletionCount,
// keyCompletionMax results, within keyCompletionTimeout. Read-only.
const (
	keyCompletionEnv     = "LOCKCTL_COMPLETE_KEYS"
	keyCompletionScans   = 5
	keyCompletionCount   = 1000
	keyCompletionMax     = 50
	keyCompletionTimeout = 500 * time.Millisecond
)

// completeLockValues completes a VALUE argument with the values of existing
// lock keys that the configured key template builds (lock:OrderId:<value>).
func (f *Factory) completeLockValues(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if f.IO.getenv(keyCompletionEnv) != "1" || f.load(cmd) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ks, err := f.keySpecSetting(false)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	// A NUL value splits the built key into the text around {value}.
	prefix, suffix, ok := strings.Cut(ks.Keys("\x00").Lock, "\x00")
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), keyCompletionTimeout)
	defer cancel()
	keys := f.scanKeys(ctx, inspect.GlobEscape(prefix+toComplete)+"*"+inspect.GlobEscape(suffix))
	values := make([]string, 0, len(keys))
	for _, k := range keys {
		if v, ok := strings.CutPrefix(k, prefix); ok {
			if v, ok = strings.CutSuffix(v, suffix); ok && v != "" {
				values = append(values, v)
			}
		}
	}
	return values, cobra.ShellCompDirectiveNoFileComp
}

// completeLockKeys completes --key with existing keys that start with what
// was typed.
func (f *Factory) completeLockKeys(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if f.IO.getenv(keyCompletionEnv) != "1" || f.load(cmd) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), keyCompletionTimeout)
	defer cancel()
	return f.scanKeys(ctx, inspect.GlobEscape(toComplete)+"*"), cobra.ShellCompDirectiveNoFileComp
}

// scanKeys returns up to keyCompletionMax keys matching pattern that can be
// typed back (typable), from at most keyCompletionScans SCAN calls; errors
// end the completion quietly. ctx's deadline cuts every socket read
// (redisWithin): a server that accepts and never answers would otherwise
// hold the shell for --timeout.
func (f *Factory) scanKeys(ctx context.Context, pattern string) []string {
	f.passwordWarned = true // a line on stderr would garble the shell's prompt
	conn, err := f.redisWithin(ctx)
	if err != nil {
		return nil
	}
	defer conn.Close()
	var out []string
	var cursor uint64
	for range keyCompletionScans {
		keys, next, err := conn.Client.Scan(ctx, cursor, pattern, keyCompletionCount).Result()
		if err != nil {
			break
		}
		for _, k := range keys {
			if typable(k) {
				out = append(out, k)
			}
		}
		if cursor = next; cursor == 0 || len(out) >= keyCompletionMax {
			break
		}
	}
	return out[:min(len(out), keyCompletionMax)]
}

// typable reports whether a key can be offered as a completion: the shell
// reads completions one a line, a tab starts a description, and a key with
// a control character, a bidi or line separator rune or bytes that are not
// UTF-8 would be written raw to the terminal, or offered as keys that do
// not exist (a newline splits one key into two).
func typable(key string) bool {
	return !strings.Contains(key, "\t") && oneLineText(key) == key
}

// completingAfterDash reports whether the word being completed comes after
// a "--". Cobra's ArgsLenAtDash cannot tell in a completion: it parses the
// words once with a "--" of its own appended (spf13/cobra#1877).
func (f *Factory) completingAfterDash() bool {
	a := f.args
	if len(a) < 2 || (a[0] != cobra.ShellCompRequestCmd && a[0] != cobra.ShellCompNoDescRequestCmd) {
		return false
	}
	return slices.Contains(a[1:len(a)-1], "--")
}

// addLockCompletion completes cmd's VALUE arguments and its --key flag from
// Redis (opt-in, see keyCompletionEnv).
func (f *Factory) addLockCompletion(cmd *cobra.Command) {
	cmd.ValidArgsFunction = f.completeLockValues
	_ = cmd.RegisterFlagCompletionFunc("key", f.completeLockKeys)
}
