// Command gendocs writes lockctl's man pages (section 1) or its Markdown
// command reference, one file per command, into a directory:
//
//	go run ./internal/gendocs markdown --dir docs/reference
//	go run ./internal/gendocs man --dir dist-extra/man
//
// It is a program of its own, not a lockctl command, because cobra/doc
// links blackfriday, whose package init took about 0.7 ms of every lockctl
// start (issue 42: start-up within 3× a Go hello world). Man pages take their
// date from SOURCE_DATE_EPOCH (Unix seconds) when it is set, for
// reproducible release builds. Bad input exits 2 with one line.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/cmd"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

func main() {
	if err := run(os.Args[1:], os.Getenv("SOURCE_DATE_EPOCH")); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(2)
	}
}

// run parses "man|markdown --dir DIR" and writes the pages of a fresh
// lockctl command tree; sourceDateEpoch is the man pages' date.
func run(args []string, sourceDateEpoch string) error {
	var dir string
	fs := pflag.NewFlagSet("gendocs", pflag.ContinueOnError)
	fs.StringVar(&dir, "dir", "", "directory to write into (created if missing)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || (fs.Arg(0) != "man" && fs.Arg(0) != "markdown") {
		return fmt.Errorf("want one format, man or markdown, got %q; usage: gendocs man|markdown --dir DIR", fs.Args())
	}
	if dir == "" {
		return fmt.Errorf("--dir is required, e.g. --dir docs/reference")
	}
	root := cmd.NewRootCmd(&cmd.Factory{IO: cmd.SystemIO()})
	return write(root, fs.Arg(0), dir, manDate(sourceDateEpoch))
}

// manDate is SOURCE_DATE_EPOCH as a UTC time; "" or not a number: now.
func manDate(sourceDateEpoch string) time.Time {
	if s, err := strconv.ParseInt(sourceDateEpoch, 10, 64); err == nil {
		return time.Unix(s, 0).UTC()
	}
	return time.Now()
}

// write writes root's pages in format (man or markdown) into dir.
func write(root *cobra.Command, format, dir string, date time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("docs directory %q: %v", dir, err)
	}
	root.DisableAutoGenTag = true
	if format == "markdown" {
		// Flags are in a code block there: only the prose is Markdown.
		markdownTexts(root, nil)
		return doc.GenMarkdownTree(root, dir)
	}
	markdownTexts(root, map[*pflag.Flag]bool{})
	// No Title: each page gets its command's (LOCKCTL-RUN(1)), not LOCKCTL(1) on all.
	return doc.GenManTree(root, &doc.GenManHeader{Section: "1", Source: "lockctl " + root.Version, Date: &date}, dir)
}

// markdownTexts prepares c's help texts, and its subcommands', for
// cobra/doc, which writes them as Markdown (and renders that into man pages
// with md2man): without it "<user config dir>" and "{<lock key>}" are
// dropped as HTML tags and "*VALUE*" and "LOCKCTL_* ... LOCKCTL_*" lose
// their stars to emphasis. Flag usages are escaped only with a done map,
// which keeps a flag shared by several commands (a persistent one) from
// being escaped twice.
func markdownTexts(c *cobra.Command, done map[*pflag.Flag]bool) {
	c.Short = manEscaper.Replace(c.Short)
	c.Long = manText(c.Long)
	for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
		if done == nil {
			break
		}
		fs.VisitAll(func(fl *pflag.Flag) {
			if !done[fl] {
				done[fl] = true
				fl.Usage = manEscaper.Replace(fl.Usage)
			}
		})
	}
	for _, sub := range c.Commands() {
		markdownTexts(sub, done)
	}
}

// manEscaper backslash-escapes the Markdown markup characters help texts use
// as plain text.
var manEscaper = strings.NewReplacer(`\`, `\\`, "<", `\<`, ">", `\>`, "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "`", "\\`")

// manText escapes a Long help text for Markdown, and keeps its indented
// lines (the lease table, run's variables, watch's events) as they are laid
// out: a preformatted block, which Markdown would otherwise reflow into the
// paragraph.
func manText(s string) string {
	indented := func(l string) bool { return strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") }
	var b strings.Builder
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); {
		if !indented(lines[i]) {
			b.WriteString(manEscaper.Replace(lines[i]) + "\n")
			i++
			continue
		}
		j := i
		for j < len(lines) && indented(lines[j]) {
			j++
		}
		// A fence needs a blank line before it to break a paragraph.
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n\n") {
			b.WriteString("\n")
		}
		b.WriteString("```\n" + strings.Join(lines[i:j], "\n") + "\n```\n")
		if j < len(lines) && lines[j] != "" {
			b.WriteString("\n")
		}
		i = j
	}
	return strings.TrimSuffix(b.String(), "\n")
}
