package cmd

import (
	"encoding/hex"
	"path"
	"strings"

	"github.com/spf13/cobra"
)

// Flag and argument checks shared by several commands (inspect, watch,
// checklist, run, simulate, unlock).

// emptyFlags refuses (exit 2) flags of names given as "": taken for left
// out, they would turn a check off without a word (--owner "$UNSET").
func emptyFlags(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed && f.Value.String() == "" {
			return emptyFlagError(name)
		}
	}
	return nil
}

// emptyFlagError is the one line (exit 2) for --name given as "".
func emptyFlagError(name string) error {
	return usageErrorf("--%s is empty; give a value, or leave the flag out", name)
}

// checkGlob refuses a malformed SCAN MATCH glob (an unclosed "[", a
// trailing "\\"): Redis accepts one and matches nothing, so a typo would
// read as "no locks" (exit 2 instead).
func checkGlob(flag, glob string) error {
	if _, err := path.Match(glob, ""); err != nil {
		return usageErrorf("--%s %q is not a valid glob (an unclosed [ or a trailing \\); accepted: * ? [abc] [^a-z] and \\ to escape", flag, glob)
	}
	return nil
}

// emptyValueError is the one line (exit 2) for a VALUE given as "".
func emptyValueError() error {
	return usageErrorf("VALUE is empty: the key template would build a key without it")
}

// parseOwner reads --owner: text as given, or hex:<bytes>.
func parseOwner(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	if h, ok := strings.CutPrefix(s, "hex:"); ok {
		b, err := hex.DecodeString(h)
		if err != nil {
			return nil, usageErrorf("owner %q is not hex after hex:", s)
		}
		return b, nil
	}
	return []byte(s), nil
}
