// Package cmd holds lockctl's Cobra commands: flags and config become an
// options struct, the options call a domain package, the result is rendered.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agnivade/levenshtein"
	"github.com/lockctl/lockctl/internal/supervise"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Execute runs lockctl with args on the given streams and returns the exit
// code (docs/exit-codes.md). main calls it with the process's own.
func Execute(args []string, io *IOStreams) int {
	if len(args) == 2 && args[0] == supervise.WatchdogArg { // run's watchdog: a second lockctl, not a command
		parent, _ := strconv.Atoi(args[1])
		if supervise.RunWatchdog(parent) != nil {
			return ExitUsage
		}
		return ExitOK
	}
	// sh ignores SIGINT and SIGQUIT in a script's background jobs
	// (stopSignals). Go's own SIGQUIT handler (a goroutine dump) hides
	// whether the second was, so it is ignored with the first, for lockctl
	// and for the child run starts. Ignore costs no signal thread.
	if signal.Ignored(os.Interrupt) {
		signal.Ignore(syscall.SIGQUIT)
	}
	ctx := &signalContext{Context: context.Background()}
	defer ctx.stop()
	f := &Factory{IO: io}
	f.takeHandOver()
	return execute(ctx, f, NewRootCmd(f), args)
}

// signalContext is cancelled by SIGINT, SIGTERM, SIGHUP or SIGQUIT, but
// installs the handlers only when a command first uses it (Done, Err, or a
// context derived from it): installing them costs a locked OS thread, about
// 1 ms of every start, which commands that never use it (lease, version, ...)
// do not pay. Unhandled, the signals end such a command the default way
// (exit 130 for Ctrl-C in the shell, 143 for SIGTERM; Go's SIGQUIT dumps
// the goroutines), as the handler would: execute exits 128 + the signal's
// number (received), after the command has cleaned up (simulate --redis
// deletes its keys, run releases its lock).
type signalContext struct {
	context.Context // context.Background(): no deadline, no values
	once            sync.Once
	installed       atomic.Bool // notified and cancel are set
	notified        context.Context
	cancel          context.CancelFunc
	received        atomic.Value // the os.Signal that cancelled notified
	forceOnSecond   atomic.Bool  // a second signal ends lockctl (endOnSecondSignal)
}

// endOnSecondSignal makes a second stop signal end lockctl within
// secondSignalGrace: for the commands that only read and print (inspect,
// watch), whose clean-up may wait on a blocked write. Commands with
// children or scratch state to clean up (run, trial, simulate --redis)
// keep waiting for theirs.
func endOnSecondSignal(ctx context.Context) {
	if c, ok := ctx.(*signalContext); ok {
		c.forceOnSecond.Store(true)
	}
}

func (c *signalContext) install() context.Context {
	c.once.Do(func() {
		notified, cancel := context.WithCancel(context.Background())
		c.notified, c.cancel = notified, cancel
		// Notify with no signals would take every signal.
		if sigs := stopSignals(); len(sigs) > 0 {
			ch, stopped := make(chan os.Signal, 1), make(chan struct{})
			signal.Notify(ch, sigs...)
			go func() {
				select {
				case s := <-ch:
					c.received.Store(s)
					cancel()
				case <-notified.Done():
					return
				}
				// A second signal ends a reading command within secondSignalGrace,
				// with nothing printed: the first one's clean-up may wait on a
				// write nobody reads (a terminal held by Ctrl-S, a full pipe),
				// which no context ends.
				for {
					select {
					case s := <-ch:
						if !c.forceOnSecond.Load() {
							continue
						}
						select {
						case <-time.After(secondSignalGrace):
							os.Exit(signalExit(s))
						case <-stopped:
						}
						return
					case <-stopped:
						return
					}
				}
			}()
			c.cancel = func() { cancel(); signal.Stop(ch); close(stopped) }
		}
		c.installed.Store(true)
	})
	return c.notified
}

// signal returns the signal that cancelled c, or nil.
func (c *signalContext) signal() os.Signal {
	s, _ := c.received.Load().(os.Signal)
	return s
}

// stopSignals are the signals that stop a command: SIGINT, SIGTERM and
// SIGHUP unless lockctl started with them ignored (supervise.NotIgnored), and SIGQUIT
// with SIGINT: sh ignores both in a script's background jobs, and Go's own
// SIGQUIT handler hides whether it was (run keeps the pair together too).
func stopSignals() []os.Signal {
	sigs := supervise.NotIgnored(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	if slices.Contains(sigs, os.Interrupt) {
		sigs = append(sigs, syscall.SIGQUIT)
	}
	return sigs
}

// stopExits are the exit code and the word execute prints for each signal
// stopSignals takes other than SIGINT (130, "interrupted").
var stopExits = map[os.Signal]struct {
	code int
	word string
}{
	syscall.SIGTERM: {ExitTerminated, "terminated"},
	syscall.SIGHUP:  {ExitHangup, "hangup"},
	syscall.SIGQUIT: {ExitQuit, "quit"},
}

// secondSignalGrace is how long a command has, after a second stop
// signal, to end the way the signal asks (inspect closes its JSON or YAML
// document at the next lock) before lockctl exits regardless.
const secondSignalGrace = time.Second

// signalExit is the exit code for a stop signal: 128 + its number.
func signalExit(s os.Signal) int {
	if e, ok := stopExits[s]; ok {
		return e.code
	}
	return ExitInterrupted
}

func (c *signalContext) Done() <-chan struct{} { return c.install().Done() }

func (c *signalContext) Err() error { return c.install().Err() }

// stop uninstalls the handlers, if they were installed.
func (c *signalContext) stop() {
	if c.installed.Load() {
		c.cancel()
	}
}

// execute runs root (built on f) with args and prints the error, if any, the
// one way every command's errors are printed: one scrubbed line and a hint.
func execute(ctx context.Context, f *Factory, root *cobra.Command, args []string) int {
	quietRedisLogs.Do(func() { redis.SetLogger(discardLogger{}) })
	io := f.IO
	f.args = args
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		if sc, ok := ctx.(*signalContext); ok {
			if e, ok := stopExits[sc.signal()]; ok {
				fmt.Fprintln(io.ErrOut, "lockctl: "+e.word)
				return e.code
			}
		}
		fmt.Fprintln(io.ErrOut, "lockctl: interrupted")
		return ExitInterrupted
	}
	code := exitCode(err)
	var ee *ExitError
	if errors.As(err, &ee) && ee.Err == nil {
		return code
	}
	// Errors quote keys and values read from Redis: control characters in
	// them are written as \xNN, as in text output.
	fmt.Fprintf(io.ErrOut, "lockctl: %s\n", oneLineText(f.scrub(joinLines(err.Error()))))
	if errors.As(err, &ee) && ee.Hint != "" {
		fmt.Fprintln(io.ErrOut, ee.Hint)
	} else if code == ExitUsage {
		fmt.Fprintf(io.ErrOut, "Run '%s --help' for usage.\n", commandPath(root, args))
	}
	return code
}

// flagValueError rewords pflag's "invalid argument "x" for "--count" flag:
// strconv.ParseInt: parsing "x": invalid syntax" to say what the flag takes.
func flagValueError(err error) error {
	var ie *pflag.InvalidValueError
	var ne *strconv.NumError
	if !errors.As(err, &ie) || !errors.As(err, &ne) {
		return err
	}
	var want string
	switch t := ie.GetFlag().Value.Type(); {
	case strings.HasPrefix(t, "int"):
		want = "a whole number"
	case strings.HasPrefix(t, "uint"):
		want = "a whole number from 0"
	case strings.HasPrefix(t, "float"):
		want = "a number"
	case t == "bool":
		want = "true or false"
	default:
		return err
	}
	reason := "is not " + want
	if errors.Is(ne.Err, strconv.ErrRange) {
		reason = "is out of range; want " + want
	}
	return fmt.Errorf("--%s %q %s", ie.GetFlag().Name, ie.GetValue(), reason)
}

// unknownFlagError adds "did you mean --budget?" to pflag's "unknown flag:
// --budegt", naming the flags of c (its own and inherited, hidden ones left
// out) within Levenshtein distance 2 of the typed name or starting with it,
// as cobra suggests a mistyped command (SuggestionsFor).
func unknownFlagError(c *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedShortnames() != "" {
		return err
	}
	typed := strings.ToLower(ne.GetSpecifiedName())
	if typed == "" {
		return err
	}
	var names []string
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		if !fl.Hidden && (levenshtein.ComputeDistance(typed, fl.Name) <= 2 || strings.HasPrefix(fl.Name, typed)) {
			names = append(names, "--"+fl.Name)
		}
	})
	if len(names) == 0 {
		return err
	}
	return fmt.Errorf("%v; did you mean %s?", err, orList(names))
}

// joinLines makes a multi-line error one line (yaml.v3 puts the cause of
// "yaml: unmarshal errors:" on the lines after it).
func joinLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, " ")
}

// commandPath names the subcommand args were for ("lockctl lease").
func commandPath(root *cobra.Command, args []string) string {
	c, _, err := root.Find(args)
	if err != nil || c == nil {
		return root.Name()
	}
	return c.CommandPath()
}

// NewRootCmd builds the command tree on f.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "lockctl",
		Short: "Inspect, reason about and safely use Redis locks for long tasks",
		Long: `lockctl shows who holds a Redis lock and what is wrong with it, explains the
budget→lease policy, simulates stale writers and other lock failures, puts
your own worker through real faults (trial), reviews a long task's design,
and runs a command under a renewed, fenced lock.

Read-only: inspect, watch, diagnose, lease, simulate (without --redis),
checklist.
Writing: run, unlock, simulate --redis (under its own key prefix), trial
(its scratch redis-server, or --redis with --yes).`,
		Example: `  lockctl lease --budget 1200s
  lockctl inspect order-demo-001
  lockctl run order-demo-001 --budget 1200s -- ./import.sh`,
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return f.load(cmd)
		},
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &ExitError{Code: ExitUsage, Err: unknownFlagError(c, flagValueError(err)), Hint: fmt.Sprintf("Run '%s --help' for usage.", c.CommandPath())}
	})

	pf := root.PersistentFlags()
	pf.StringVar(&f.ConfigFile, "config", "", "config file (default ./lockctl.yaml, else <user config dir>/lockctl/config.yaml)")
	pf.String("redis", "", "Redis URL (default redis://127.0.0.1:6379/0): redis://[user[:password]@]host[:port][/db], rediss:// for TLS, redis+sentinel://host:port[,...]/master[/db], redis+cluster://host:port[,...], redis+redlock://a:6379,b:6379,c:6379[,...][/db] for inspect and watch")
	flagConfigKey(pf, "redis", keyRedisURL)
	pf.String("sentinel", "", "connect through Redis Sentinel: host:port[,host:port...] of the sentinels (needs --master-name)")
	flagConfigKey(pf, "sentinel", keyRedisSentinel)
	pf.String("master-name", "", "name the sentinels monitor the primary under")
	flagConfigKey(pf, "master-name", keyRedisMasterName)
	pf.Bool("cluster", false, "the --redis address(es) are Redis Cluster nodes")
	flagConfigKey(pf, "cluster", keyRedisCluster)
	pf.String("tls-ca", "", "PEM file of the CA that signed the server's certificate (rediss:// only)")
	flagConfigKey(pf, "tls-ca", keyRedisTLSCA)
	pf.String("tls-cert", "", "PEM client certificate, with --tls-key (rediss:// only)")
	flagConfigKey(pf, "tls-cert", keyRedisTLSCert)
	pf.String("tls-key", "", "PEM key of --tls-cert")
	flagConfigKey(pf, "tls-key", keyRedisTLSKey)
	pf.Bool("tls-insecure", false, "do not verify the server's TLS certificate (tests only)")
	flagConfigKey(pf, "tls-insecure", keyRedisTLSInsecure)
	pf.StringP("output", "o", "", "output format: table, json, yaml (some commands offer more)")
	flagConfigKey(pf, "output", keyOutput)
	_ = root.RegisterFlagCompletionFunc("output", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		if formats, ok := cmd.Annotations[outputFormatsKey]; ok {
			return strings.Split(formats, ","), cobra.ShellCompDirectiveNoFileComp
		}
		return allFormats, cobra.ShellCompDirectiveNoFileComp
	})
	pf.String("timeout", "", "timeout of each Redis call (default 5s)")
	flagConfigKey(pf, "timeout", keyRedisTimeout)
	pf.Bool("no-color", false, "no colour in table output (NO_COLOR is honoured too)")
	flagConfigKey(pf, "no-color", keyNoColor)

	root.AddCommand(
		NewCmdVersion(f, nil),
		NewCmdLease(f, nil),
		NewCmdConfig(f, nil),
		NewCmdChecklist(f, nil),
		NewCmdRun(f, nil),
		NewCmdUnlock(f, nil),
		NewCmdSimulate(f, nil),
		NewCmdInspect(f, nil),
		NewCmdWatch(f, nil),
		NewCmdTrial(f, nil),
		NewCmdDiagnose(f, nil),
		NewCmdExporter(f, nil),
	)
	root.SetHelpCommand(newCmdHelp())
	wrapHelp(root, f.IO)
	// --version as gh and etcdctl offer it, the same line as `lockctl version`.
	root.SetVersionTemplate(versionLine(currentVersion()) + "\n")
	root.InitDefaultCompletionCmd()
	completionExamples(root)
	checkArgs(root)
	return root
}

// checkArgs makes every command that only groups subcommands (lockctl,
// config, completion) print its help when run bare and refuse an unknown
// subcommand with exit 2: Cobra runs no argument check on a command without
// a Run, and shows the help with exit 0 instead. A wrong argument count names
// the command's usage line.
func checkArgs(c *cobra.Command) {
	if c.HasSubCommands() && !c.Runnable() {
		c.Args = cobra.NoArgs
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	if check := c.Args; check != nil {
		// Cobra says "accepts 1 arg(s), received 0", or "unknown command"
		// for an argument to a command that takes none: add what it takes.
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			switch {
			case err == nil:
				return nil
			case !cmd.HasSubCommands() && strings.HasPrefix(err.Error(), "unknown command"):
				return fmt.Errorf("%s takes no arguments, got %q; usage: %s", cmd.CommandPath(), args, cmd.UseLine())
			case strings.HasPrefix(err.Error(), "unknown command") && len(args) > 0:
				// cobra.NoArgs drops the suggestion cobra makes for a typo
				// (as cobra's own does: prefix or Levenshtein distance 2).
				cmd.SuggestionsMinimumDistance = max(cmd.SuggestionsMinimumDistance, 2)
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					return fmt.Errorf("%v; did you mean %s?", err, orList(s))
				}
			case strings.HasPrefix(err.Error(), "accepts "):
				return fmt.Errorf("%s %v; usage: %s", cmd.CommandPath(), err, cmd.UseLine())
			}
			return err
		}
	}
	for _, sub := range c.Commands() {
		checkArgs(sub)
	}
}

// orList joins words as "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// newCmdHelp is cobra's help command, but an unknown topic is exit 2 with
// one line (cobra's prints the root's help and exits 0, so a typo in a
// script goes unseen).
func newCmdHelp() *cobra.Command {
	return &cobra.Command{
		Use:     "help [command]",
		Short:   "Help about any command",
		Example: "  lockctl help inspect",
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			var names []string
			if len(args) == 0 {
				for _, sub := range c.Root().Commands() {
					if sub.IsAvailableCommand() {
						names = append(names, sub.Name())
					}
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || (cmd == c.Root() && len(rest) > 0) {
				return usageErrorf("unknown help topic %q; 'lockctl help' lists the commands", strings.Join(args, " "))
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// helpWidth is what --help wraps to when its output is not a terminal
// (the width of a pager, a man page or a review diff).
const helpWidth = 80

// wrapHelp makes --help wrap flag descriptions to the terminal's width,
// else helpWidth (issue 32 §4: pflag writes each on one line, up to 295
// characters), and gives cobra's generated commands (completion) examples.
func wrapHelp(root *cobra.Command, io *IOStreams) {
	width := helpWidth
	if io.OutTTY && io.OutWidth > 0 {
		width = io.OutWidth
	}
	addHelpFuncs.Do(func() {
		cobra.AddTemplateFunc("flagUsagesWrapped", flagUsagesWrapped)
	})
	tmpl := root.UsageTemplate()
	for _, set := range []string{"LocalFlags", "InheritedFlags"} {
		tmpl = strings.Replace(tmpl, "{{."+set+".FlagUsages ", fmt.Sprintf("{{flagUsagesWrapped .%s %d ", set, width), 1)
	}
	root.SetUsageTemplate(tmpl)
}

var addHelpFuncs sync.Once

// completionExamples gives cobra's completion command and its shells an
// Examples section, as every other command has.
func completionExamples(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Long = wrapWords(c.Long, helpWidth)
		c.Example = "  source <(lockctl completion bash)\n  lockctl completion zsh > \"${fpath[1]}/_lockctl\""
		for _, sh := range c.Commands() {
			sh.Long = wrapWords(sh.Long, helpWidth)
			sh.Example = "  lockctl completion " + sh.Name() + " --help   # how to load it in every session"
		}
	}
}

// flagUsagesWrapped is pflag's flag list with each description wrapped at
// spaces to width cells under its own column (pflag's FlagUsagesWrapped
// stops wrapping at a word longer than what is left of a line).
func flagUsagesWrapped(fs *pflag.FlagSet, width int) string {
	lines := strings.Split(strings.TrimRight(fs.FlagUsages(), "\n"), "\n")
	col := 0 // the descriptions' column: after the flag, two spaces or more
	for _, l := range lines {
		spec := strings.TrimLeft(l, " ")
		if !strings.HasPrefix(spec, "-") {
			continue
		}
		if gap := strings.Index(spec, "  "); gap > 0 {
			start := len(l) - len(spec) + gap
			col = max(col, start+len(spec[gap:])-len(strings.TrimLeft(spec[gap:], " ")))
		}
	}
	if col == 0 || width-col < 20 {
		return strings.Join(lines, "\n") + "\n"
	}
	var b strings.Builder
	for _, l := range lines {
		if len(l) <= col {
			b.WriteString(l + "\n")
			continue
		}
		wrapped := wrapWords(l[col:], width-col)
		b.WriteString(l[:col] + strings.ReplaceAll(wrapped, "\n", "\n"+strings.Repeat(" ", col)) + "\n")
	}
	return b.String()
}
