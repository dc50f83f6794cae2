package cmd

import (
	"fmt"
	"strings"

	"github.com/lockctl/lockctl/trial"
	"github.com/lockctl/lockctl/trial/storeapi"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// trialCleanupResult is what `trial --cleanup` prints: the scratch state
// it dropped (docs/trial.md, "What a killed trial leaves").
type trialCleanupResult struct {
	Dropped []trial.Orphan `json:"dropped"`
}

// cleanupOptions checks `trial --cleanup [--store URL]`: no command, and
// none of the flags of a run but --store (exit 2).
func (v *trialFlags) cleanupOptions(f *Factory, cmd *cobra.Command, args []string, format string) (*TrialOptions, error) {
	if len(args) > 0 {
		return nil, usageErrorf("--cleanup runs no trial: drop the command %q", strings.Join(args, " "))
	}
	var other []string
	cmd.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Changed && fl.Name != "cleanup" && fl.Name != "store" {
			other = append(other, "--"+fl.Name)
		}
	})
	if len(other) > 0 {
		return nil, usageErrorf("--cleanup takes only --store (and -o); drop %s", strings.Join(other, ", "))
	}
	opts := &TrialOptions{Printer: f.newPrinter(format), ErrOut: f.IO.ErrOut, Ctx: cmd.Context(), Cleanup: true}
	if v.store != "" {
		f.secrets = append(f.secrets, storeSecrets(v.store)...)
		opts.Store = &trialStore{URL: v.store}
	}
	return opts, nil
}

// trialCleanup drops and lists what killed trials left: exit 3 when the
// --store server cannot be listed, 2 for a bad --store URL.
func trialCleanup(opts *TrialOptions) error {
	res := trialCleanupResult{Dropped: trial.DropOrphans("")}
	if opts.Store != nil {
		dbs, err := storeapi.DropOrphans(opts.Ctx, opts.Store.URL)
		res.Dropped = append(res.Dropped, databases(dbs)...)
		if err != nil {
			_ = printCleanup(opts.Printer, res)
			return storeError(err)
		}
	}
	return printCleanup(opts.Printer, res)
}

func printCleanup(p *Printer, res trialCleanupResult) error {
	return p.Print(res, func(t *TableView) {
		if len(res.Dropped) == 0 {
			t.Line("nothing to drop: no scratch state of a trial whose lockctl is gone")
			return
		}
		rows := make([][]string, 0, len(res.Dropped))
		for _, o := range res.Dropped {
			rows = append(rows, []string{o.Kind, o.Name, o.Why})
		}
		t.Table([]string{"KIND", "NAME", "WHY"}, rows)
	})
}

// dropOrphans drops, before a trial, what killed trials left, and says so
// in one line on stderr; so too a --store server that cannot be listed.
func dropOrphans(opts *TrialOptions) {
	out := trial.DropOrphans("")
	if opts.Store != nil {
		dbs, err := storeapi.DropOrphans(opts.Ctx, opts.Store.URL)
		if err != nil {
			fmt.Fprintf(opts.ErrOut, "lockctl: looking for the scratch databases of killed trials: %v\n", err)
		}
		out = append(out, databases(dbs)...)
	}
	if len(out) > 0 {
		fmt.Fprintf(opts.ErrOut, "lockctl: dropped what killed trials left: %s\n", orphanList(out))
	}
}

func databases(dbs []storeapi.Dropped) []trial.Orphan {
	out := make([]trial.Orphan, 0, len(dbs))
	for _, d := range dbs {
		out = append(out, trial.Orphan{Kind: trial.OrphanDatabase, Name: d.Name, Why: d.Why})
	}
	return out
}

// orphanList is the one line naming what was dropped and why.
func orphanList(dropped []trial.Orphan) string {
	parts := make([]string, 0, len(dropped))
	for _, o := range dropped {
		parts = append(parts, fmt.Sprintf("%s %s (%s)", o.Kind, o.Name, o.Why))
	}
	return strings.Join(parts, "; ")
}
