package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/trial"
)

// The printers of `lockctl trial`: table (timeline, swimlanes, verdict),
// mermaid and junit; json and yaml come from the Result's tags.

func printTrial(p *Printer, res trial.Result) error {
	switch p.Format {
	case formatMermaid:
		_, err := fmt.Fprint(p.Out, mermaid(res.History()))
		return err
	case formatJUnit:
		return trialJUnit(p, res)
	case formatHTML:
		return trialHTML(p.Out, res)
	}
	return p.Print(res, func(t *TableView) { trialTable(t, res) })
}

// trialTable renders a trial as simulate renders a run: heading, timeline
// of faults, violations and the telling lock events, swimlanes, verdict.
func trialTable(t *TableView, res trial.Result) {
	st := t.Styles()
	t.Title(fmt.Sprintf("trial of %s: %d workers, %s, seed %d", oneLineText(strings.Join(res.Command, " ")), res.Workers, fmtMS(res.DurationMS), res.Seed))
	nem := strings.Join(res.Nemeses, ", ")
	if nem == "" {
		nem = "none"
	}
	t.Line("redis: %s; containment: %s; nemesis: %s; %s", res.Redis, res.Containment, nem, plural(res.Ops, "client operation", "client operations"))
	t.Line("lock timeline: %s", eventCounts(res.Events))
	t.Line("")
	header, rows := trialRows(res)
	t.Table(header, rows)
	t.Line("")
	for _, l := range swimlane(st, res.History(), laneWidth(t.Width())) {
		t.Line("%s", l)
	}
	t.Line("")
	if res.Partial {
		t.Line("verdict: %s (partial: Redis refused the lock timeline, see the notes)", st.Level(res.Verdict))
	} else {
		t.Line("verdict: %s", st.Level(res.Verdict))
	}
	for _, v := range res.Violations {
		t.Line("  %s %s at %s (%s, %s): %s", st.Level("error"), v.Code, fmtMS(v.AtMS), trial.WorkerName(v.Worker), v.Source, oneLineText(v.Detail))
		for _, r := range v.Rows {
			t.Line("    %s", oneLineText(strings.Join(r, " | ")))
		}
	}
	for _, w := range res.Reports {
		line := fmt.Sprintf("w%d: %s, %s", w.Worker, plural(w.Starts, "start", "starts"), plural(w.Ops, "operation", "operations"))
		if len(w.LastErrs) > 0 {
			line += "; stderr: " + oneLineText(w.LastErrs[len(w.LastErrs)-1])
		}
		t.Line("%s", line)
	}
	if s := seriesLine(res); s != "" {
		t.Line("%s", s)
	}
	for _, n := range res.Notes {
		t.Line("note: %s", n)
	}
}

// telling are the lock events the table lists. Acquisitions, releases and
// take-overs are in the swimlanes, counted, and in the JSON: a release and
// the next acquisition within one sample show as a TAKEOVER, so the table
// would list one for most hand-overs.
var telling = map[string]bool{inspect.EventExpired: true, inspect.EventTTLJump: true, inspect.EventFenceBackwards: true}

// eventCounts is "12 ACQUIRED, 9 RELEASED, ..." over the lock timeline, in
// order of first appearance.
func eventCounts(evs []trial.Event) string {
	var order []string
	n := map[string]int{}
	for _, e := range evs {
		if n[e.Event] == 0 {
			order = append(order, e.Event)
		}
		n[e.Event]++
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
	}
	if len(parts) == 0 {
		return "no lock key seen"
	}
	return strings.Join(parts, ", ")
}

// trialRows is the pure row builder of the timeline: faults, violations
// and telling lock events, in time order.
func trialRows(res trial.Result) ([]string, [][]string) {
	type row struct {
		at    int64
		cells []string
	}
	var rows []row
	for _, f := range res.Faults {
		what := f.Kind
		if f.DurationMS > 0 {
			what += " " + fmtMS(f.DurationMS)
		}
		rows = append(rows, row{f.AtMS, []string{fmtMS(f.AtMS), trial.WorkerName(f.Worker), "FAULT " + what, f.Key, f.Note}})
	}
	for _, e := range res.Events {
		if telling[e.Event] {
			rows = append(rows, row{e.AtMS, []string{fmtMS(e.AtMS), trial.WorkerName(e.Worker), e.Event, e.Key, e.Detail}})
		}
	}
	for _, v := range res.Violations {
		rows = append(rows, row{v.AtMS, []string{fmtMS(v.AtMS), trial.WorkerName(v.Worker), v.Code, v.Resource, v.Detail}})
	}
	// Stable by time: faults before the events and violations they caused.
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && rows[j].at < rows[j-1].at; j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = r.cells
	}
	return []string{"time", "worker", "event", "key", "detail"}, out
}

// trialJUnit writes one test case per run (per seed), failed when unsafe
// or inconclusive, with the reported run's violations as its failure's text.
func trialJUnit(p *Printer, res trial.Result) error {
	summaries := res.Runs
	if len(summaries) == 0 {
		summaries = []trial.RunSummary{{Seed: res.Seed, Verdict: res.Verdict, Violations: len(res.Violations), DurationMS: res.DurationMS}}
	}
	runs := make([]junitRun, 0, len(summaries))
	for _, r := range summaries {
		jr := junitRun{Name: fmt.Sprintf("seed %d", r.Seed), DurationMS: r.DurationMS, Verdict: r.Verdict, Violations: r.Violations}
		if r.Seed == res.Seed {
			jr.Found = res.History().Violations
		}
		runs = append(runs, jr)
	}
	return writeJUnit(p.Out, "lockctl trial "+strings.Join(res.Command, " "), "lockctl.trial", runs)
}

// seriesLine says what a --runs series found, the run shown being its
// last: "counterexample: seed 7 (run 3 of the series)"; "" for one run.
func seriesLine(res trial.Result) string {
	switch {
	case res.CounterexampleSeed != nil:
		return fmt.Sprintf("counterexample: seed %d (run %d of the series)", *res.CounterexampleSeed, len(res.Runs))
	case len(res.Runs) > 1:
		return fmt.Sprintf("no counterexample in %d runs (seeds %d..%d); the last is shown", len(res.Runs), res.Runs[0].Seed, res.Runs[len(res.Runs)-1].Seed)
	}
	return ""
}

// trialHTML writes the trial as htmlReport's page: its swimlanes, the
// facts of its table's heading, each NOT_LINEARIZABLE violation's failing
// window with Porcupine's visualization of it, its notes and timeline.
func trialHTML(w io.Writer, res trial.Result) error {
	nem := strings.Join(res.Nemeses, ", ")
	if nem == "" {
		nem = "none"
	}
	extra := htmlExtra{Heading: fmt.Sprintf("trial of %s", oneLineText(strings.Join(res.Command, " "))), Notes: res.Notes,
		Facts: []string{
			fmt.Sprintf("%d workers, %s, seed %d; nemesis: %s; %s", res.Workers, fmtMS(res.DurationMS), res.Seed, nem, plural(res.Ops, "client operation", "client operations")),
			fmt.Sprintf("redis: %s; containment: %s; lock timeline: %s", res.Redis, res.Containment, eventCounts(res.Events)),
		}}
	if res.Linearizable != "" {
		extra.Facts = append(extra.Facts, "linearizability check (Porcupine): "+res.Linearizable)
	}
	if s := seriesLine(res); s != "" {
		extra.Facts = append(extra.Facts, s)
	}
	extra.Timeline.Header, extra.Timeline.Rows = trialRows(res)
	for _, v := range res.Violations {
		if v.Code != history.CodeNotLinearizable {
			continue
		}
		win := htmlWindow{Resource: v.Resource, Detail: v.Detail, Rows: v.Rows}
		if v.Linearization != nil {
			var b strings.Builder
			if err := v.Linearization.Visualize(&b); err == nil {
				win.Porcupine = b.String()
			}
		}
		extra.Windows = append(extra.Windows, win)
	}
	return htmlReport(w, res.History(), extra)
}
