package cmd

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/simulate"
)

// The HTML printer of `lockctl simulate -o html` and `lockctl trial -o
// html`: one self-contained page (inline CSS and SVG, no request of any
// kind) to attach to an incident review, drawn from the run's history.Run.

const formatHTML = "html"

//go:embed html.tmpl
var htmlReportText string

// htmlReportTmpl is parsed on first use: every other command starts without it.
var htmlReportTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"fmtMS":           fmtMS,
		"inc":             func(i int) int { return i + 1 },
		"porcupineHeight": porcupineHeight,
		"who":             violationWho,
		"refused":         func(r []bool, i int) bool { return i < len(r) && r[i] },
	}).Parse(htmlReportText))
})

// htmlExtra is what a page shows beside its history.Run: the lines under
// its title, for a trial the failing windows of the Porcupine check, the
// command's own tables (simulate's guards), its notes and its timeline as
// its table output prints it.
type htmlExtra struct {
	// Heading names the run ("scenario stale-writer", "trial of ...").
	Heading  string
	Facts    []string
	Windows  []htmlWindow
	Tables   []htmlTable
	Notes    []string
	Timeline htmlTable
}

// htmlTable is a table of the page: its id, heading, header and rows;
// Refused marks the rows drawn as refused (nil: none).
type htmlTable struct {
	ID, Title string
	Header    []string
	Rows      [][]string
	Refused   []bool
}

// htmlWindow is a NOT_LINEARIZABLE violation's failing part: Rows as
// trial.Violation's (worker, invoke, ok or "-" when it never returned,
// what it did; times as fmtMS writes them), Porcupine its visualization
// page ("" when there is none).
type htmlWindow struct {
	Resource  string
	Detail    string
	Rows      [][]string
	Porcupine string
}

// Geometry of the swimlane SVG, in its user units (1 unit is 1 CSS px at
// the page's 960px width).
const (
	svgWidth  = 960
	svgLeft   = 92  // where the time axis starts, right of the labels
	svgRight  = 900 // where it ends, room for the last marker's label
	svgTop    = 34  // room for the axis and the violations' badges
	svgLaneH  = 36
	svgMarkH  = 8
	svgMinSeg = 1.5 // the least width a segment is drawn with, so a 1ms write shows
)

// htmlReport writes run as one HTML page: title, verdict, legend,
// swimlanes with faults, fences and violations, the failing windows, the
// violations, extra's tables and notes, and the timeline. Every string of
// run and extra is escaped by html/template; the page's
// Content-Security-Policy lets nothing load (only the inline styles and
// Porcupine's inline scripts, by hash, run). Errors are w's.
func htmlReport(w io.Writer, run history.Run, extra htmlExtra) error {
	view := struct {
		Run     history.Run
		Extra   htmlExtra
		Title   string
		Unsafe  bool
		CSP     string
		Lanes   htmlLanes
		Windows []htmlWindowView
	}{Run: run, Extra: extra, Title: oneLineText(extra.Heading) + ": " + run.Verdict, Unsafe: run.Verdict != history.VerdictSafe, Lanes: swimlaneSVG(run)}
	var scripts []string
	for _, win := range extra.Windows {
		v := windowSVG(win)
		if win.Porcupine != "" {
			scripts = append(scripts, inlineScripts(win.Porcupine)...)
		}
		view.Windows = append(view.Windows, v)
	}
	view.CSP = htmlCSP(scripts)
	var buf bytes.Buffer
	if err := htmlReportTmpl().Execute(&buf, view); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// simulateHTMLExtra is a simulation's heading and the facts its table
// shows above the timeline: the lease, the nodes, the store.
func simulateHTMLExtra(res simulate.Result) htmlExtra {
	extra := htmlExtra{Heading: "scenario " + oneLineText(res.Scenario), Facts: []string{"lease " + leaseText(res.Lease)}}
	if res.Nodes > 1 {
		extra.Facts = append(extra.Facts, fmt.Sprintf("%d Redlock nodes, a majority of %d within the validity time", res.Nodes, res.Nodes/2+1))
	}
	correct := "correct"
	if !res.Store.Correct {
		correct = "a stale write was accepted"
	}
	extra.Facts = append(extra.Facts, fmt.Sprintf("store: highest fence %d, %d accepted, %d rejected: %s", res.Store.HighestFence, res.Store.Accepted, res.Store.Rejected, correct))
	guards := htmlTable{ID: "guards", Title: "Guards", Header: []string{"guard", "on", "effect", "note"}}
	for _, g := range res.Guards {
		on := "off"
		if g.Enabled {
			on = "on"
		}
		guards.Rows = append(guards.Rows, []string{g.Guard, on, g.Effect, g.Note})
	}
	extra.Tables, extra.Notes = []htmlTable{guards}, res.Notes
	extra.Timeline.Header, extra.Timeline.Rows = timelineRows(res)
	for _, e := range res.Events {
		extra.Timeline.Refused = append(extra.Timeline.Refused, !e.OK)
	}
	return extra
}

// htmlCSP is the page's policy: nothing from anywhere (default-src
// 'none'), inline styles, and only the scripts whose SHA-256 is given
// (Porcupine's, which the srcdoc frames inherit the policy for).
func htmlCSP(scripts []string) string {
	src := "'none'"
	if len(scripts) > 0 {
		hashes := make([]string, len(scripts))
		for i, s := range scripts {
			sum := sha256.Sum256([]byte(s))
			hashes[i] = "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		}
		src = strings.Join(hashes, " ")
	}
	return "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src " + src + "; base-uri 'none'; form-action 'none'"
}

// inlineScripts are the texts of page's <script> elements (Porcupine's
// page has one; its data is JSON with < escaped, so no "</script>" inside).
func inlineScripts(page string) []string {
	var out []string
	for {
		i := strings.Index(page, "<script>")
		if i < 0 {
			return out
		}
		page = page[i+len("<script>"):]
		j := strings.Index(page, "</script>")
		if j < 0 {
			return out
		}
		out = append(out, page[:j])
		page = page[j:]
	}
}

// htmlLanes is the swimlane SVG's content: its height, the axis ticks, one
// row per actor, the lock and each Redlock node, the violations' lines.
type htmlLanes struct {
	Height     int
	Ticks      []htmlTick
	Rows       []htmlRow
	Violations []htmlMark
}

type htmlTick struct {
	X     string
	Label string
}

// htmlRow is one lane: its label, y, its segments and its markers.
type htmlRow struct {
	Label    string
	Y, MidY  int
	Segments []htmlSeg
	Marks    []htmlMark
}

type htmlSeg struct {
	X, W  string
	X2    string // X + W
	Class string
	Label string // the lock's holder, drawn when it fits
	TextX string
	Title string
}

// htmlMark is an event drawn on a lane: a fault, a write with its fence,
// an acquisition with its fence, a violation (Num: its number in the
// violations table).
type htmlMark struct {
	X     string
	Class string
	Label string
	Title string
	Num   int
}

// swimlaneSVG lays run out: one row per lane, then the lock's holder, then
// each Redlock node; every step of a lane's actor that is a fault, a write
// or a fenced acquisition as a marker on its row (a server's on the lock's
// row); every violation as a numbered line across all rows.
func swimlaneSVG(run history.Run) htmlLanes {
	end := max(run.EndMS, 1)
	x := func(ms int64) float64 {
		return svgLeft + float64(svgRight-svgLeft)*float64(min(max(ms, 0), end))/float64(end)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	var out htmlLanes
	for _, t := range axisTicks(end) {
		out.Ticks = append(out.Ticks, htmlTick{X: f(x(t)), Label: fmtMS(t)})
	}
	row := func(label string) *htmlRow {
		y := svgTop + len(out.Rows)*svgLaneH
		out.Rows = append(out.Rows, htmlRow{Label: label, Y: y, MidY: y + 11})
		return &out.Rows[len(out.Rows)-1]
	}
	seg := func(r *htmlRow, from, to int64, class, label, title string) {
		w := max(x(to)-x(from), svgMinSeg)
		s := htmlSeg{X: f(x(from)), W: f(w), X2: f(x(from) + w), Class: class, Title: title, TextX: f(x(from) + w/2)}
		if float64(len(label))*7+4 < w {
			s.Label = label
		}
		r.Segments = append(r.Segments, s)
	}
	rowOf := map[string]int{}
	for _, lane := range run.Lanes {
		r := row(lane.Actor)
		rowOf[lane.Actor] = len(out.Rows) - 1
		for _, s := range lane.Segments {
			class, what := segmentClass(s)
			seg(r, s.FromMS, s.ToMS, class, "", fmt.Sprintf("%s %s–%s: %s", lane.Actor, fmtMS(s.FromMS), fmtMS(s.ToMS), what))
		}
	}
	lockRow := len(out.Rows)
	holderRow(row("lock"), run.Steps, end, seg, func(s history.Step) string { return s.Holder })
	for k := 0; k < run.Nodes && run.Nodes > 1; k++ {
		holderRow(row("n"+strconv.Itoa(k+1)), run.Steps, end, seg, func(s history.Step) string {
			if k >= len(s.Nodes) {
				return ""
			}
			if s.Nodes[k].Down {
				return "down"
			}
			return s.Nodes[k].Holder
		})
	}
	for _, s := range run.Steps {
		class, label := stepMark(s)
		if class == "" {
			continue
		}
		i, ok := rowOf[s.Actor]
		if !ok {
			i = lockRow
		}
		out.Rows[i].Marks = append(out.Rows[i].Marks, htmlMark{X: f(x(s.AtMS)), Class: class, Label: label,
			Title: stepTitle(s)})
	}
	for i, v := range run.Violations {
		out.Violations = append(out.Violations, htmlMark{X: f(x(v.AtMS)), Class: "violation", Label: v.Code, Num: i + 1,
			Title: fmt.Sprintf("%d. %s at %s (%s): %s", i+1, v.Code, fmtMS(v.AtMS), violationWho(v), v.Detail)})
	}
	out.Height = svgTop + len(out.Rows)*svgLaneH + 22
	return out
}

// stepTitle is s in words, with the server's reply: "33s B write, fence 34: accepted".
func stepTitle(s history.Step) string {
	t := strings.Join(strings.Fields(fmtMS(s.AtMS)+" "+s.Actor+" "+s.Text), " ")
	if s.Reply != "" {
		t += ": " + s.Reply
	}
	return t
}

// violationWho is whom v is over: its actor, else its server's role.
func violationWho(v history.Violation) string {
	if v.Actor != "" {
		return v.Actor
	}
	return v.Server
}

// holderRow draws who holds (holder(s) after each step, "" for free) as
// segments, one per stretch of one holder.
func holderRow(r *htmlRow, steps []history.Step, end int64, seg func(*htmlRow, int64, int64, string, string, string), holder func(history.Step) string) {
	cur, from := "", int64(0)
	flush := func(to int64) {
		if cur != "" && to > from {
			class := "held"
			if cur == "down" {
				class = "down"
			}
			seg(r, from, to, class, cur, fmt.Sprintf("%s %s–%s: %s", r.Label, fmtMS(from), fmtMS(to), cur))
		}
	}
	for _, s := range steps {
		if h := holder(s); h != cur {
			flush(s.AtMS)
			cur, from = h, s.AtMS
		}
	}
	flush(end)
}

// segmentClass is a lane segment's CSS class and words, by the rank the
// text swimlane (laneChar) gives its states.
func segmentClass(s history.Segment) (string, string) {
	switch {
	case s.State == history.LaneCrashed:
		return "crashed", "crashed"
	case s.State == history.LaneIdle:
		return "idle", "idle"
	case s.State == history.LanePaused:
		return "paused", "paused"
	case !s.Holds:
		return "lost", s.State + " without the lock"
	case s.State == history.LaneCall:
		return "call", "in a blocking call"
	case s.State == history.LanePartitioned:
		return "partitioned", "cut off from Redis"
	}
	return "holding", s.State + " with the lock"
}

// stepMark is how s shows on its lane ("" when it does not): a fault, a
// write with its fence (refused: class rejected), a fenced acquisition.
func stepMark(s history.Step) (string, string) {
	fence := "#" + strconv.FormatInt(s.Fence, 10)
	switch {
	case s.Fault != "":
		return "fault", strings.ReplaceAll(s.Fault, "_", " ")
	case s.Server == history.ServerStore && s.Fence > 0 && !s.Refused:
		return "write", fence
	case s.Server == history.ServerStore && s.Fence > 0:
		return "write rejected", fence + "✗"
	case s.Server == history.ServerLock && s.Fence > 0 && !s.Refused:
		return "fence", fence
	}
	return "", ""
}

// axisTicks are about 6 round times from 0 to end (ms), end included.
func axisTicks(end int64) []int64 {
	step := int64(1)
	for mag := int64(1); ; mag *= 10 {
		found := false
		for _, m := range []int64{1, 2, 5} {
			if end/(m*mag) <= 6 {
				step, found = m*mag, true
				break
			}
		}
		if found {
			break
		}
	}
	var out []int64
	for t := int64(0); t < end; t += step {
		if end-t >= step/2 || t == 0 {
			out = append(out, t)
		}
	}
	return append(out, end)
}

// htmlWindowView is a failing window drawn as one bar per operation, from
// its invoke to its ok (to the window's end when it never returned).
type htmlWindowView struct {
	htmlWindow
	Height int
	Ticks  []htmlTick
	Bars   []htmlBar
}

type htmlBar struct {
	Y, TextY        int
	X, W, TextX     string
	Worker, What    string
	Pending         bool
	Invoke, Returns string
}

// windowSVG lays out win's rows; a row whose times do not parse (they are
// fmtMS's text, which time.ParseDuration reads) is listed but not drawn.
func windowSVG(win htmlWindow) htmlWindowView {
	v := htmlWindowView{htmlWindow: win}
	type op struct {
		from, to int64
		pending  bool
		row      []string
	}
	var ops []op
	lo, hi := int64(-1), int64(0)
	for _, r := range win.Rows {
		if len(r) < 4 {
			continue
		}
		from, err := time.ParseDuration(r[1])
		if err != nil {
			continue
		}
		o := op{from: from.Milliseconds(), to: from.Milliseconds(), pending: r[2] == "-", row: r}
		if to, err := time.ParseDuration(r[2]); err == nil {
			o.to = to.Milliseconds()
		}
		if lo < 0 || o.from < lo {
			lo = o.from
		}
		hi = max(hi, o.to, o.from)
		ops = append(ops, o)
	}
	span := max(hi-lo, 1)
	x := func(ms int64) float64 { return svgLeft + float64(svgRight-svgLeft-240)*float64(ms-lo)/float64(span) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	for _, t := range axisTicks(span) {
		v.Ticks = append(v.Ticks, htmlTick{X: f(x(lo + t)), Label: fmtMS(lo + t)})
	}
	for i, o := range ops {
		to := o.to
		if o.pending {
			to = hi
		}
		w := max(x(to)-x(o.from), svgMinSeg)
		y := svgTop + i*22
		v.Bars = append(v.Bars, htmlBar{Y: y, TextY: y + 12, X: f(x(o.from)), W: f(w), TextX: f(x(o.from) + w + 6),
			Worker: o.row[0], What: o.row[3], Pending: o.pending, Invoke: o.row[1], Returns: o.row[2]})
	}
	v.Height = svgTop + len(ops)*22 + 10
	return v
}

// porcupineHeight is the frame's height in px for Porcupine's drawing of
// a window's rows: its legend, and a 30px box and 15px gap per client (a client is a
// worker, numbered from w1: Porcupine draws every client up to the
// highest).
func porcupineHeight(rows [][]string) int {
	n := 1
	for _, r := range rows {
		if w, err := strconv.Atoi(strings.TrimPrefix(r[0], "w")); err == nil {
			n = max(n, w)
		}
	}
	return 45 + 20 + 30*n + 15*(n-1) + 40
}
