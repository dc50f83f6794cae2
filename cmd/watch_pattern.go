package cmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockctl/lockctl/fleet"
	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/spf13/cobra"
)

// patternInterval is --interval's default with --pattern: a pass over a
// large keyspace is paced over it, 100ms would make the scan a flood.
const patternInterval = "10s"

func addWatchPatternFlags(cmd *cobra.Command, pattern *string, rate *int64) {
	fl := cmd.Flags()
	fl.StringVar(pattern, "pattern", "", "follow every lock matching this SCAN glob (repeated passes; interval default 10s)")
	fl.Int64Var(rate, "scan-rate", 0, "with --pattern: keyspace entries SCAN walks per second (default: DBSIZE / --interval)")
}

// checkWatchPattern refuses --pattern beside values or keys, an empty or bad glob and a negative --scan-rate; with --pattern it makes
// --interval default to patternInterval.
func checkWatchPattern(cmd *cobra.Command, args, keys []string, pattern string, rate int64, interval *string) error {
	if err := emptyFlags(cmd, "pattern"); err != nil {
		return err
	}
	if pattern == "" {
		if cmd.Flags().Changed("scan-rate") {
			return usageErrorf("--scan-rate needs --pattern")
		}
		return nil
	}
	if err := checkGlob("pattern", pattern); err != nil {
		return err
	}
	if len(args) > 0 || len(keys) > 0 {
		return usageErrorf("--pattern follows every matching key; give it without VALUE or --key")
	}
	if rate < 0 {
		return usageErrorf("--scan-rate %d must be at least 1 (or 0 for DBSIZE / --interval)", rate)
	}
	if !cmd.Flags().Changed("interval") {
		*interval = patternInterval
	}
	return nil
}

// watchPatternRun is `watch --pattern`: fleet.Follower passes until
// --duration or Ctrl-C, each event a line (or a JSON object with jsonl). A
// failed pass is retried at the next interval for up to --timeout, as a
// failed sample is.
func watchPatternRun(opts *WatchOptions) error {
	conn, err := opts.Redis(opts.Ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := watchWindow(opts.Ctx, opts.Duration)
	defer cancel()
	f := fleet.New(patternReader(opts, conn), conn.Client, patternFleetOptions(opts))
	out := bufio.NewWriter(opts.Printer.Out)
	sink := &patternSink{out: out, jsonl: opts.Format == formatJSONL, st: opts.Printer.Styles, width: opts.IO.OutWidth}
	sink.enc = json.NewEncoder(out)
	sink.enc.SetEscapeHTML(false)
	var failingSince time.Time
	var lastErr error
	sink.passDone = func() {
		if !failingSince.IsZero() {
			fmt.Fprintf(opts.IO.ErrOut, "lockctl: watch: redis %s answers again after %s\n", conn.URL, lockcore.FormatDuration(time.Since(failingSince).Truncate(time.Millisecond)))
		}
		failingSince, lastErr = time.Time{}, nil
	}
	err = f.Run(opts.Ctx, ctx, sink, func(err error) error {
		_ = out.Flush()
		lastErr = err
		switch {
		case !retryable(err) || !failingSince.IsZero() && time.Since(failingSince) > conn.Timeout:
			return err
		case failingSince.IsZero():
			failingSince = time.Now()
			fmt.Fprintf(opts.IO.ErrOut, "lockctl: watch: redis %s: %s; retrying for up to %s (--timeout)\n", conn.URL, conn.errLine(err), lockcore.FormatDuration(conn.Timeout))
		}
		return nil
	})
	if ferr := out.Flush(); ferr != nil && err == nil {
		err = ferr
	}
	switch {
	case opts.Ctx.Err() != nil:
		return opts.Ctx.Err()
	case err == nil: // --duration ended between passes
		return watchEnd(opts, ctx, conn, lastErr)
	}
	return redisError(conn.URL, err)
}

// patternReader is the Light reader of watch --pattern's passes: no
// value read beyond inspect.ScanMaxValueBytes.
func patternReader(opts *WatchOptions, conn *RedisConn) *inspect.Reader {
	reader := newReader(&InspectOptions{FenceFor: opts.FenceFor, LeaseCap: opts.LeaseCap, Permits: opts.Permits, Declared: opts.Declared}, conn, nil)
	reader.Light = true
	reader.MaxValueBytes = inspect.ScanMaxValueBytes
	return reader
}

// patternFleetOptions are the passes' options of watch --pattern.
func patternFleetOptions(opts *WatchOptions) fleet.Options {
	return fleet.Options{Pattern: opts.Pattern, Interval: opts.Interval, Rate: opts.ScanRate,
		Watch: inspect.WatchOptions{RenewBound: opts.RenewBound}}
}

// patternSink writes a Follower's events; output is flushed after each pass.
type patternSink struct {
	out      *bufio.Writer
	enc      *json.Encoder
	jsonl    bool
	st       *Styles
	width    int
	passDone func()
}

func (s *patternSink) Lock(*inspect.Lock, time.Duration) {}

func (s *patternSink) Event(e inspect.Event) error {
	if s.jsonl {
		return s.enc.Encode(e)
	}
	_, err := io.WriteString(s.out, patternLine(s.st, e, s.width)+"\n")
	return err
}

func (s *patternSink) PassDone(fleet.Pass) {
	_ = s.out.Flush()
	s.passDone()
}

// patternWord is the widest event name a pattern line pads to (FINDING_CLEARED).
const patternWord = 15

// patternLine is one event for people: the time of day (UTC, ms), the
// event, the key and the message; past width (a terminal's columns) the
// message wraps onto lines indented under the event, so 80 columns read.
func patternLine(st *Styles, e inspect.Event, width int) string {
	clock := e.At
	if len(clock) >= 23 {
		clock = clock[11:23]
	}
	word := watchWord(st, e.Event) + strings.Repeat(" ", max(1, patternWord+1-len(e.Event)))
	head := clock + " " + word + oneLineText(e.Key)
	line := head + ": " + oneLineText(e.Message)
	if width <= 0 || cellWidth(line) <= width {
		return line
	}
	indent := strings.Repeat(" ", len(clock)+1)
	msg := wrapText(oneLineText(e.Message), max(20, width-len(indent)))
	return head + "\n" + indent + strings.ReplaceAll(msg, "\n", "\n"+indent)
}
