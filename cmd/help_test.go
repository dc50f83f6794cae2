package cmd_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/lockctl/lockctl/cmd"
	"github.com/spf13/cobra"
)

// Every command's --help fits 80 columns when its output is not a terminal
// and has an Examples section (issue 32 §4: flag lines were up to 295
// characters wide).
func TestHelpFitsAndHasExamples(t *testing.T) {
	t.Parallel()
	f := &cmd.Factory{IO: &cmd.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}, Env: inprocEnv(t)}}
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Hidden || c.Name() == "__complete" || c.Name() == "__completeNoDesc" {
			return
		}
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(cmd.NewRootCmd(f), nil)
	if len(paths) < 15 {
		t.Fatalf("only %d commands found", len(paths))
	}
	for _, path := range paths {
		out, errOut, code := execute(t, append(path, "--help")...)
		name := strings.Join(append([]string{"lockctl"}, path...), " ")
		if code != 0 {
			t.Errorf("%s --help: exit %d: %s", name, code, errOut)
			continue
		}
		if !strings.Contains(out, "\nExamples:\n") {
			t.Errorf("%s --help has no Examples section", name)
		}
		for _, l := range strings.Split(out, "\n") {
			if w := lipgloss.Width(l); w > 80 {
				t.Errorf("%s --help: a line is %d wide: %q", name, w, l)
			}
		}
	}
}
