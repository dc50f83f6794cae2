package cmd

import (
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/lockcore"
	"github.com/spf13/cobra"
)

// LeaseOptions are the inputs of `lockctl lease`.
type LeaseOptions struct {
	Printer *Printer
	Policy  lockcore.Policy
	Budgets []time.Duration
	Modes   []lockcore.Mode
}

// LeaseResult is the stable JSON shape of `lockctl lease -o json` (docs/lease.md).
type LeaseResult struct {
	Policy lockcore.PolicyReport  `json:"policy"`
	Leases []lockcore.LeaseReport `json:"leases"`
}

// NewCmdLease returns `lockctl lease`; runF replaces the run function in tests.
func NewCmdLease(f *Factory, runF func(*LeaseOptions) error) *cobra.Command {
	var budgets []string
	var mode string
	cmd := &cobra.Command{
		Use:         "lease --budget DURATION[,DURATION...]",
		Annotations: outputFormats(dataFormats),
		Short:       "Show the lease a budget gets under the policy, and its effects",
		Long: `Show the budget→lease policy of long-running tasks and its consequences.

  ordinary call (HTTP, script):   lease = budget, fixed, never renewed
  trusted durable background task: lease = min(budget, lease cap), renewed
                                   every renew-every (default lease/3) up to
                                   a renewal bound of max(budget, renew bound)

For each row: the renewals it takes to run the whole budget, the worst-case
take-over wait after the holder crashes (one lease), the margin the holder
must stop before its lease ends (lease × 0.01 + 2ms, the clock-drift
allowance Redlock clients use), and warnings. Never touches Redis.`,
		Example: `  lockctl lease --budget 1200s
  lockctl lease --budget 30s,1200s,13h --mode trusted
  lockctl lease --budget 70s --lease-cap 45s -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := f.Output(dataFormats...)
			if err != nil {
				return err
			}
			opts := &LeaseOptions{Printer: f.newPrinter(format)}
			if opts.Policy, err = f.policySetting(); err != nil {
				return err
			}
			if opts.Budgets, err = parseBudgets(budgets); err != nil {
				return err
			}
			if opts.Modes, err = parseModeSet(mode); err != nil {
				return err
			}
			if len(opts.Modes) == 1 && opts.Modes[0] == lockcore.ModeOrdinary {
				if err := renewFlagsUnused(cmd); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return leaseRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&budgets, "budget", nil, "execution budget(s), repeatable or comma-separated: 30s,1200s,13h (required)")
	fl.StringVar(&mode, "mode", "both", "trusted, ordinary or both")
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{"trusted", "ordinary", "both"}, cobra.ShellCompDirectiveNoFileComp))
	addPolicyFlags(cmd)
	return cmd
}

func parseBudgets(raw []string) ([]time.Duration, error) {
	if len(raw) == 0 {
		return nil, usageErrorf("--budget is required, e.g. --budget 1200s or --budget 30s,1200s,13h")
	}
	out := make([]time.Duration, 0, len(raw))
	for _, s := range raw {
		d, err := lockcore.ParsePositiveDuration(s)
		if err != nil {
			return nil, usageErrorf("budget %s", err)
		}
		out = append(out, d)
	}
	return out, nil
}

// renewFlagsUnused refuses (exit 2) --renew-every and --renew-bound given
// with --mode ordinary: an ordinary lease is the budget, fixed, never
// renewed, so they would be ignored without a word.
func renewFlagsUnused(cmd *cobra.Command) error {
	for _, name := range []string{"renew-every", "renew-bound"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return usageErrorf("--%s applies to renewed leases (--mode trusted); an ordinary lease is the budget, fixed, never renewed", name)
		}
	}
	return nil
}

func parseModeSet(s string) ([]lockcore.Mode, error) {
	if s == "both" {
		return []lockcore.Mode{lockcore.ModeOrdinary, lockcore.ModeTrusted}, nil
	}
	m, err := lockcore.ParseMode(s)
	if err != nil {
		return nil, usageErrorf("mode %q is not one of trusted, ordinary, both", s)
	}
	return []lockcore.Mode{m}, nil
}

func leaseRun(opts *LeaseOptions) error {
	res := LeaseResult{Policy: opts.Policy.Report(), Leases: []lockcore.LeaseReport{}}
	var leases []lockcore.Lease
	for _, b := range opts.Budgets {
		for _, m := range opts.Modes {
			l, err := opts.Policy.LeaseFor(b, m)
			if err != nil {
				return usageErrorf("%v", err)
			}
			leases = append(leases, l)
			res.Leases = append(res.Leases, l.Report())
		}
	}
	return opts.Printer.Print(res, func(t *TableView) {
		every := "lease/3"
		if opts.Policy.RenewEvery > 0 {
			every = lockcore.FormatDuration(opts.Policy.RenewEvery)
		}
		t.Line("policy: lease cap %s, renewal bound %s, renew every %s", lockcore.FormatDuration(opts.Policy.LeaseCap), lockcore.FormatDuration(opts.Policy.RenewBound), every)
		t.Line("")
		header, rows := leaseRows(leases)
		t.Table(header, rows)
		st := t.Styles()
		for _, l := range leases {
			for _, w := range l.Warnings {
				t.Line("%s %s %s: %s", st.Level("warning"), lockcore.FormatDuration(l.Budget), l.Mode, w.Message)
			}
		}
	})
}

// leaseRows is the pure row builder of the lease table.
func leaseRows(leases []lockcore.Lease) ([]string, [][]string) {
	header := []string{"budget", "mode", "lease", "renewed", "every", "bound", "renewals", "takeover wait", "cancel margin", "warnings"}
	rows := make([][]string, 0, len(leases))
	for _, l := range leases {
		renewed, every, bound := "no", "-", "-"
		if l.Renewable {
			renewed, every, bound = "yes", lockcore.FormatDuration(l.RenewEvery), lockcore.FormatDuration(l.RenewBound)
		}
		codes := make([]string, len(l.Warnings))
		for i, w := range l.Warnings {
			codes[i] = w.Code
		}
		warn := strings.Join(codes, ",")
		if warn == "" {
			warn = "-"
		}
		rows = append(rows, []string{
			lockcore.FormatDuration(l.Budget), string(l.Mode), lockcore.FormatDuration(l.Lease), renewed, every, bound,
			strconv.FormatInt(l.Renewals, 10), lockcore.FormatDuration(l.TakeoverWait), lockcore.FormatDuration(l.CancelMargin), warn,
		})
	}
	return header, rows
}
