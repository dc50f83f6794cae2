package cmd

import (
	"encoding/xml"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/simulate"
	"github.com/lockctl/lockctl/trial"
)

// The printers of `lockctl trial`: table (timeline, swimlanes, verdict),
// mermaid and junit; json and yaml come from the Result's tags.

func printTrial(p *Printer, res trial.Result) error {
	switch p.Format {
	case formatMermaid:
		_, err := fmt.Fprint(p.Out, trialMermaid(res))
		return err
	case formatJUnit:
		return trialJUnit(p, res)
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
	t.Line("redis: %s; nemesis: %s; %s", res.Redis, nem, plural(res.Ops, "client operation", "client operations"))
	t.Line("lock timeline: %s", eventCounts(res.Events))
	t.Line("")
	header, rows := trialRows(res)
	t.Table(header, rows)
	t.Line("")
	for _, l := range swimlane(st, trialAsSimulation(res), laneWidth(t.Width())) {
		t.Line("%s", l)
	}
	t.Line("")
	t.Line("verdict: %s", st.Level(res.Verdict))
	for _, v := range res.Violations {
		t.Line("  %s %s at %s (%s, %s): %s", st.Level("error"), v.Code, fmtMS(v.AtMS), trialWorker(v.Worker), v.Source, oneLineText(v.Detail))
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
	if res.CounterexampleSeed != nil {
		t.Line("counterexample: seed %d (run %d of the series)", *res.CounterexampleSeed, len(res.Runs))
	} else if len(res.Runs) > 1 {
		t.Line("no counterexample in %d runs (seeds %d..%d)", len(res.Runs), res.Runs[0].Seed, res.Runs[len(res.Runs)-1].Seed)
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
		rows = append(rows, row{f.AtMS, []string{fmtMS(f.AtMS), trialWorker(f.Worker), "FAULT " + what, f.Key, f.Note}})
	}
	for _, e := range res.Events {
		if telling[e.Event] {
			rows = append(rows, row{e.AtMS, []string{fmtMS(e.AtMS), trialWorker(e.Worker), e.Event, e.Key, e.Detail}})
		}
	}
	for _, v := range res.Violations {
		rows = append(rows, row{v.AtMS, []string{fmtMS(v.AtMS), trialWorker(v.Worker), v.Code, v.Resource, v.Detail}})
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

func trialWorker(w int) string {
	if w <= 0 {
		return "-"
	}
	return "w" + strconv.Itoa(w)
}

// trialAsSimulation is a trial in simulate's shape, for its swimlane
// renderer: workers as actors, lock events and faults as events (the
// lock's holder named by its worker's number), violations as theirs.
func trialAsSimulation(res trial.Result) simulate.Result {
	sim := simulate.Result{Scenario: "trial of " + strings.Join(res.Command, " "), Verdict: res.Verdict, EndMS: res.DurationMS, Lanes: res.Lanes}
	for _, l := range res.Lanes {
		sim.Actors = append(sim.Actors, l.Actor)
	}
	var evs []simulate.Event
	for _, e := range res.Events {
		se := simulate.Event{AtMS: e.AtMS, Actor: trialWorker(e.Worker), Kind: strings.ToLower(e.Event), OK: true, Note: e.Key + ": " + e.Detail}
		switch e.Event {
		case inspect.EventHeld, inspect.EventAcquired, inspect.EventTakeover, inspect.EventRenewed, inspect.EventTTLJump:
			holder := "?"
			if e.Worker > 0 {
				holder = strconv.Itoa(e.Worker)
			}
			se.Lock = &simulate.LockView{Holder: holder, PTTLMS: e.PTTLMS}
		}
		evs = append(evs, se)
	}
	for _, f := range res.Faults {
		evs = append(evs, simulate.Event{AtMS: f.AtMS, Actor: trialWorker(f.Worker), Kind: "fault_" + f.Kind, OK: true, Note: f.Note, Lock: lockAt(evs, f.AtMS)})
	}
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].AtMS < evs[j-1].AtMS; j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
	sim.Events = evs
	for _, v := range res.Violations {
		sim.Violations = append(sim.Violations, simulate.Violation{Code: v.Code, AtMS: v.AtMS, Actor: trialWorker(v.Worker), Message: v.Detail})
	}
	return sim
}

// lockAt is the lock view in force at ms among the lock events so far.
func lockAt(evs []simulate.Event, ms int64) *simulate.LockView {
	var l *simulate.LockView
	for _, e := range evs {
		if e.AtMS <= ms && !strings.HasPrefix(e.Kind, "fault_") {
			l = e.Lock
		}
	}
	return l
}

// trialJUnit writes one test case per run (per seed), failed when unsafe,
// with the violations as the failure's text.
func trialJUnit(p *Printer, res trial.Result) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
	}
	type suite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	runs := res.Runs
	if len(runs) == 0 {
		runs = []trial.RunSummary{{Seed: res.Seed, Verdict: res.Verdict, Violations: len(res.Violations), DurationMS: res.DurationMS}}
	}
	s := suite{Name: "lockctl trial " + strings.Join(res.Command, " "), Tests: len(runs)}
	for _, r := range runs {
		c := testcase{Name: fmt.Sprintf("seed %d", r.Seed), Classname: "lockctl.trial", Time: fmt.Sprintf("%.3f", float64(r.DurationMS)/1000)}
		if r.Verdict == trial.VerdictUnsafe {
			s.Failures++
			var b strings.Builder
			if r.Seed == res.Seed {
				for _, v := range res.Violations {
					fmt.Fprintf(&b, "%s at %s (%s): %s\n", v.Code, fmtMS(v.AtMS), trialWorker(v.Worker), v.Detail)
				}
			}
			c.Failure = &failure{Message: fmt.Sprintf("unsafe: %d violations", r.Violations), Type: "unsafe", Text: b.String()}
		}
		s.Cases = append(s.Cases, c)
	}
	if _, err := fmt.Fprint(p.Out, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(p.Out)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := fmt.Fprintln(p.Out)
	return err
}

// trialMermaid renders a trial as a Mermaid sequence diagram: the workers'
// acquisitions and releases as messages to Redis, expiries, faults on Redis
// and violations as notes, in time order.
func trialMermaid(res trial.Result) string {
	var b strings.Builder
	clean := strings.NewReplacer(";", ",", "#", "no. ", "\n", " ").Replace
	line := func(format string, args ...any) { fmt.Fprintf(&b, "    "+format+"\n", args...) }
	type item struct {
		at   int64
		text string
	}
	var items []item
	add := func(at int64, format string, args ...any) {
		items = append(items, item{at, clean(fmt.Sprintf(format, args...))})
	}
	store := false
	for _, e := range res.Events {
		switch {
		case e.Worker > 0 && (e.Event == inspect.EventAcquired || e.Event == inspect.EventTakeover || e.Event == inspect.EventHeld):
			add(e.AtMS, "w%d->>R: %s acquired %s", e.Worker, fmtMS(e.AtMS), e.Key)
		case e.Worker > 0 && e.Event == inspect.EventReleased:
			add(e.AtMS, "w%d->>R: %s released %s", e.Worker, fmtMS(e.AtMS), e.Key)
		default:
			add(e.AtMS, "Note over R: %s %s %s (%s)", fmtMS(e.AtMS), e.Key, strings.ToLower(e.Event), trialWorker(e.Worker))
		}
	}
	for _, f := range res.Faults {
		over := "R"
		if f.Worker > 0 && f.Kind != trial.FaultExpire {
			over = trialWorker(f.Worker)
		}
		what := f.Kind
		if f.DurationMS > 0 {
			what += " " + fmtMS(f.DurationMS)
		}
		add(f.AtMS, "Note over %s: %s FAULT %s: %s", over, fmtMS(f.AtMS), what, f.Note)
	}
	for _, v := range res.Violations {
		over := trialWorker(v.Worker)
		switch {
		case v.Source == trial.SourceStore:
			over, store = "S", true
		case v.Worker <= 0:
			over = "R"
		}
		add(v.AtMS, "Note over %s: %s at %s: %s", over, v.Code, fmtMS(v.AtMS), v.Detail)
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].at < items[j].at })
	b.WriteString("sequenceDiagram\n")
	line("title %s: %s (seed %d)", clean("trial of "+strings.Join(res.Command, " ")), res.Verdict, res.Seed)
	for w := 1; w <= res.Workers; w++ {
		line("participant w%d", w)
	}
	line("participant R as Redis")
	if store {
		line("participant S as Store")
	}
	for _, it := range items {
		line("%s", it.text)
	}
	return b.String()
}
