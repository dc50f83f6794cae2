package cmd

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// DocsOptions are the inputs of `lockctl docs`.
type DocsOptions struct {
	Root   *cobra.Command
	Format string // man or markdown
	Dir    string
	// SourceDateEpoch is $SOURCE_DATE_EPOCH (Unix seconds): the man pages'
	// date, for reproducible builds; "" or not a number: today.
	SourceDateEpoch string
}

// NewCmdDocs returns `lockctl docs man|markdown --dir DIR`.
func NewCmdDocs(f *Factory, runF func(*DocsOptions) error) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "docs man|markdown --dir DIR",
		Short: "Generate man pages or the Markdown command reference",
		Long: `Generate man pages (section 1) or the Markdown command reference, one file
per command, into DIR (created if missing). The Markdown reference in
docs/reference is generated this way and a test fails when it is out of date.
Man pages take their date from SOURCE_DATE_EPOCH when it is set.`,
		Example: `  lockctl docs markdown --dir docs/reference
  lockctl docs man --dir /tmp/man && man /tmp/man/lockctl-lease.1`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"man", "markdown"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := choice("docs format", args[0], "man", "markdown"); err != nil {
				return err
			}
			if dir == "" {
				return usageErrorf("--dir is required, e.g. --dir docs/reference")
			}
			opts := &DocsOptions{Root: cmd.Root(), Format: args[0], Dir: dir, SourceDateEpoch: f.IO.getenv("SOURCE_DATE_EPOCH")}
			if runF != nil {
				return runF(opts)
			}
			return docsRun(opts)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to write into (required)")
	return cmd
}

func docsRun(opts *DocsOptions) error {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return usageErrorf("docs directory %q: %v", opts.Dir, err)
	}
	opts.Root.DisableAutoGenTag = true
	if opts.Format == "markdown" {
		// Flags are in a code block there: only the prose is Markdown.
		markdownTexts(opts.Root, nil)
		return doc.GenMarkdownTree(opts.Root, opts.Dir)
	}
	date := time.Now()
	if s, err := strconv.ParseInt(opts.SourceDateEpoch, 10, 64); err == nil {
		date = time.Unix(s, 0).UTC()
	}
	markdownTexts(opts.Root, map[*pflag.Flag]bool{})
	// No Title: each page gets its command's (LOCKCTL-RUN(1)), not LOCKCTL(1) on all.
	return doc.GenManTree(opts.Root, &doc.GenManHeader{Section: "1", Source: "lockctl " + version, Date: &date}, opts.Dir)
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
