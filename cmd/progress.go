package cmd

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/trial"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// addQuietFlag adds --quiet: no progress line on a terminal's stderr.
func addQuietFlag(cmd *cobra.Command, quiet *bool) {
	cmd.Flags().BoolVarP(quiet, "quiet", "q", false, "show no progress line on a terminal's stderr")
}

// liveBar is one progress line on a terminal's stderr, redrawn by its
// caller (a ticker or a callback) and erased by stop.
type liveBar struct {
	bar  *progressbar.ProgressBar
	max  int64
	desc int // the most cells a description may take
	once sync.Once
}

// liveBarRoom is what the bar takes after its description: " 100% |",
// 10 cells, "| ", and a last column left free (a line that fills it wraps,
// and the erasing \r then clears only the wrapped part).
const liveBarRoom = 7 + 10 + 2 + 1

// newLiveBar draws a bar of steps (> 0) on w, with "(n/steps)"
// after it when count, fitted to w's width (80 columns when unknown).
func newLiveBar(w io.Writer, steps int64, count bool) *liveBar {
	o := []progressbar.Option{progressbar.OptionSetWriter(w), progressbar.OptionSetWidth(10),
		progressbar.OptionSetPredictTime(false), progressbar.OptionClearOnFinish()}
	room := liveBarRoom
	if count {
		o = append(o, progressbar.OptionShowCount())
		room += 2*len(strconv.FormatInt(steps, 10)) + 4
	}
	cols := 80
	if f, ok := w.(*os.File); ok {
		if n := terminalWidth(os.Getenv("COLUMNS"), f); n > 0 {
			cols = n
		}
	}
	return &liveBar{bar: progressbar.NewOptions64(steps, o...), max: steps, desc: max(cols-room, 10)}
}

// show redraws the bar at value with head+tail as its description, head
// shortened in the middle to fit (the counts in tail stay whole). The
// value stays below max: progressbar erases a bar for good at max.
func (b *liveBar) show(value int64, head, tail string) {
	b.bar.Describe(shortenMiddle(head, max(b.desc-cellWidth(tail), 5)) + tail)
	_ = b.bar.Set64(max(0, min(value, b.max-1)))
}

// stop erases the line; later calls do nothing.
func (b *liveBar) stop() { b.once.Do(func() { _ = b.bar.Finish() }) }

// trialProgress renders trial.Options.Progress on a terminal's stderr;
// run is "" for one run, else "run 2/10 ". Its stop erases the line.
func trialProgress(w io.Writer, run string) (func(trial.Progress), func()) {
	var mu sync.Mutex
	var bar *liveBar
	render := func(p trial.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if bar == nil {
			bar = newLiveBar(w, p.Duration.Milliseconds(), false)
		}
		head, tail := trialStatus(p)
		bar.show(p.Elapsed.Milliseconds(), run+head, tail)
	}
	stop := func() {
		mu.Lock()
		defer mu.Unlock()
		if bar != nil {
			bar.stop()
		}
	}
	return render, stop
}

// trialStatus is the progress line's text, e.g. "trial 12s/30s, 18s left"
// and "; faults 3, violations 0".
func trialStatus(p trial.Progress) (head, tail string) {
	elapsed := p.Elapsed.Truncate(time.Second) // the two add up to Duration
	s := fmt.Sprintf("trial %s/%s, %s left", elapsed, p.Duration, max(0, p.Duration-elapsed))
	switch p.Phase {
	case trial.PhaseStopping:
		s = fmt.Sprintf("trial %s: stopping", elapsed)
	case trial.PhaseJudging:
		s = fmt.Sprintf("trial %s: judging the db", elapsed)
	}
	return s, fmt.Sprintf("; faults %d, violations %d", p.Faults, p.Violations)
}

// scanProgressEvery spaces the redraws of inspect --pattern's bar.
const scanProgressEvery = 100 * time.Millisecond

// scanProgressAfter is how long a scan runs before its bar shows: a short
// scan prints no line that would only flash (the tests set it to 0).
var scanProgressAfter = 500 * time.Millisecond

// scanProgress is inspect --pattern's bar: keys walked by SCAN out of
// DBSIZE, and the locks read and judged so far (counted as emitted).
type scanProgress struct {
	bar            *liveBar
	pattern        string
	walked, judged atomic.Int64
	start          time.Time
	quit, done     chan struct{}
	halt           sync.Once
}

// startScanProgress starts the bar (nil when total is not positive); it
// sets so.Progress.
func startScanProgress(w io.Writer, pattern string, total int64, so *inspect.ScanOptions) *scanProgress {
	if total <= 0 {
		return nil
	}
	p := &scanProgress{bar: newLiveBar(w, total, true), pattern: pattern, start: time.Now(), quit: make(chan struct{}), done: make(chan struct{})}
	so.Progress = func(walked int64) { p.walked.Store(walked) }
	go func() {
		defer close(p.done)
		tick := time.NewTicker(scanProgressEvery)
		defer tick.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-tick.C:
				p.draw()
			}
		}
	}()
	return p
}

// draw redraws the bar once the scan has run scanProgressAfter.
func (p *scanProgress) draw() {
	if time.Since(p.start) < scanProgressAfter {
		return
	}
	p.bar.show(p.walked.Load(), "scanning "+p.pattern, fmt.Sprintf(": %d locks judged", p.judged.Load()))
}

// counting wraps emit to count the locks judged.
func (p *scanProgress) counting(emit func(inspect.Lock) error) func(inspect.Lock) error {
	if p == nil {
		return emit
	}
	return func(l inspect.Lock) error {
		p.judged.Add(1)
		return emit(l)
	}
}

// scanned ends the redraws at the scan's end; with sorting, the line says
// "sorting N locks by TTL" until stop, else it is erased.
func (p *scanProgress) scanned(sorting bool, n int) {
	if p == nil {
		return
	}
	p.halt.Do(func() { close(p.quit); <-p.done })
	// A scan due its bar shows it though it ended before the first tick.
	if !sorting || time.Since(p.start) < scanProgressAfter {
		p.bar.stop()
		return
	}
	p.draw() // the final count, then what is left to wait for
	p.bar.show(p.walked.Load(), fmt.Sprintf("sorting %d locks by TTL", n), "")
}

// stop erases the line (also after scanned).
func (p *scanProgress) stop() {
	if p == nil {
		return
	}
	p.halt.Do(func() { close(p.quit); <-p.done })
	p.bar.stop()
}
