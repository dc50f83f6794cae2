package cmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/simulate"
	"github.com/schollz/progressbar/v3"
)

// The table printer of `lockctl simulate --explore`.

// exploreTable renders an exploration: what was varied, the counts per
// invariant, and the shortest counterexample as a scenario file.
func exploreTable(t *TableView, res simulate.ExploreResult) {
	st := t.Styles()
	how := "grid"
	if res.Seed != nil {
		how = fmt.Sprintf("random, seed %d", *res.Seed)
	}
	t.Title(fmt.Sprintf("explore %s (%s): %s, %d violating", oneLineText(res.Scenario), how, plural(res.Schedules, "schedule", "schedules"), res.Violating))
	if len(res.Dimensions) == 0 {
		t.Line("nothing to vary: the scenario has no pause, partition, crash, call, failover or clock jump; only the base schedule ran")
	}
	for _, d := range res.Dimensions {
		actor := d.Actor
		if actor == "" {
			actor = "redis"
		}
		what := string(d.Action)
		switch {
		case len(d.Nodes) > 0 && actor == "redis":
			actor = nodesText(d.Nodes)
		case len(d.Nodes) > 0:
			what += " from " + nodesText(d.Nodes)
		}
		t.Line("  varied: %s's %s, %s from %s to %s", actor, what, d.Field, fmtMS(d.FromMS), fmtMS(d.ToMS))
	}
	t.Line("")
	if len(res.ByCode) > 0 {
		rows := make([][]string, 0, len(res.ByCode))
		for _, c := range res.ByCode {
			rows = append(rows, []string{c.Code, strconv.Itoa(c.Schedules)})
		}
		t.Table([]string{"invariant", "violating schedules"}, rows)
		t.Line("")
	}
	t.Line("verdict: %s", st.Level(res.Verdict))
	if res.Counterexample == nil {
		return
	}
	t.Line("")
	t.Line("shortest counterexample (save it and replay with --file):")
	for _, v := range res.Counterexample.Violations {
		t.Line("  # %s at %s (%s): %s", v.Code, fmtMS(v.AtMS), v.Actor, v.Message)
	}
	t.Line("%s", strings.TrimRight(res.Counterexample.File, "\n"))
}

// simulateExplore searches the schedules around the scenario, with a
// progress bar on a terminal's stderr, and prints what it found.
func simulateExplore(opts *SimulateOptions) error {
	p := opts.Printer
	ctx := opts.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	eo := opts.ExploreOpts
	if opts.Progress != nil {
		var bar *progressbar.ProgressBar
		eo.Progress = func(done, total int) {
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(opts.Progress),
					progressbar.OptionSetDescription("exploring schedules"), progressbar.OptionThrottle(100*time.Millisecond),
					progressbar.OptionClearOnFinish())
			}
			_ = bar.Set(done)
			if done >= total {
				_ = bar.Finish()
			}
		}
	}
	res, err := simulate.Explore(ctx, opts.Scenario, eo)
	if err != nil {
		return err
	}
	if err := p.Print(res, func(t *TableView) { exploreTable(t, res) }); err != nil {
		return err
	}
	return expectVerdict(opts.Expect, res.Verdict)
}
