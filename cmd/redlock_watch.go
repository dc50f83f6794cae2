package cmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/fleet"
	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/lockcore"
)

// redlockWatchRun is watch over the nodes of a redis+redlock:// URL: every
// node sampled at once each --interval, one line per event on a node (its
// own events, NODE_DOWN, NODE_UP) and per change of the quorum
// (QUORUM_ACQUIRED, QUORUM_LOST, SPLIT; docs/redlock.md). A node that
// fails is an event, not the end: watch exits 3 only when no node answers
// for longer than --timeout.
func redlockWatchRun(opts *WatchOptions) error {
	conn, err := opts.Redlock(opts.Ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := watchWindow(opts.Ctx, opts.Duration)
	defer cancel()
	iopts := &InspectOptions{Values: opts.Values, Keys: opts.Keys, KeySpec: opts.KeySpec, FenceFor: opts.FenceFor, LeaseCap: opts.LeaseCap}
	res, err := resolveKeys(iopts, false)
	if err != nil {
		return err
	}
	reader := newReader(iopts, &RedisConn{}, res.fences)
	differs := make([]*inspect.QuorumDiffer, len(res.keys))
	for i := range differs {
		differs[i] = inspect.NewQuorumDiffer(len(conn.Nodes), inspect.WatchOptions{RenewBound: opts.RenewBound}, inspect.QuorumOptions{LeaseMS: opts.RedlockLease.Milliseconds(), ErrorText: conn.errText})
	}
	enc := json.NewEncoder(opts.IO.Out)
	enc.SetEscapeHTML(false)
	tick := time.NewTicker(opts.Interval)
	defer tick.Stop()
	var failingSince time.Time
	for {
		reads := reader.ReadNodes(opts.Ctx, conn.Nodes, res.keys)
		if opts.Ctx.Err() != nil {
			return opts.Ctx.Err()
		}
		down := allNodesDown(reads)
		switch {
		case !down:
			failingSince = time.Time{}
		case failingSince.IsZero():
			failingSince = time.Now()
		case time.Since(failingSince) > conn.Timeout:
			return redisError(conn.URL, fmt.Errorf("no node answered for %s (--timeout); node %s: %s", lockcore.FormatDuration(conn.Timeout), reads[0].Addr, conn.errText(reads[0].Err)))
		}
		for i, k := range res.keys {
			for _, e := range differs[i].Next(k, i, reads) {
				if opts.Format == formatJSONL {
					err = enc.Encode(e)
				} else {
					_, err = opts.Printer.Out.Write([]byte(quorumWatchLine(opts.Printer.Styles, e) + "\n"))
				}
				if err != nil {
					return err
				}
			}
		}
		select {
		case <-ctx.Done():
			if opts.Ctx.Err() != nil {
				return opts.Ctx.Err()
			}
			if down {
				return redisError(conn.URL, fmt.Errorf("no node answered the last sample; node %s: %s", reads[0].Addr, conn.errText(reads[0].Err)))
			}
			return nil
		case <-tick.C:
		}
	}
}

// allNodesDown reports whether no node answered a sample.
func allNodesDown(reads []inspect.NodeRead) bool {
	for _, r := range reads {
		if r.Err == nil {
			return false
		}
	}
	return true
}

// quorumWatchLine is the table format of one Redlock watch event: a node's
// event names the node after the key.
func quorumWatchLine(st *Styles, e inspect.QuorumEvent) string {
	where := ""
	if e.Node != "" {
		where = " @" + e.Node
	}
	return e.At + " " + watchWord(st, e.Event.Event) + " " + oneLineText(e.Key) + where + ": " + oneLineText(e.Message)
}

// redlockPatternRun is `watch --pattern` over Redlock nodes: fleet's
// QuorumFollower passes until --duration or Ctrl-C, one line (or JSON
// object) per event of a node or of a key's quorum. A pass that no node
// finishes is retried at the next interval for up to --timeout.
func redlockPatternRun(opts *WatchOptions) error {
	conn, err := opts.Redlock(opts.Ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := watchWindow(opts.Ctx, opts.Duration)
	defer cancel()
	f := fleet.NewQuorum(patternReader(opts, &RedisConn{}), conn.Nodes, patternFleetOptions(opts),
		inspect.QuorumOptions{LeaseMS: opts.RedlockLease.Milliseconds(), ErrorText: conn.errText})
	out := bufio.NewWriter(opts.Printer.Out)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	emit := func(e inspect.QuorumEvent) error {
		if opts.Format == formatJSONL {
			return enc.Encode(e)
		}
		_, err := out.WriteString(quorumWatchLine(opts.Printer.Styles, e) + "\n")
		return err
	}
	var failingSince time.Time
	err = f.Run(opts.Ctx, ctx, emit, func() {
		_ = out.Flush()
		failingSince = time.Time{}
	}, func(err error) error {
		_ = out.Flush()
		if failingSince.IsZero() {
			failingSince = time.Now()
		} else if time.Since(failingSince) > conn.Timeout {
			return fmt.Errorf("no node answered for %s (--timeout); %s", lockcore.FormatDuration(conn.Timeout), conn.errText(err))
		}
		return nil
	})
	if ferr := out.Flush(); ferr != nil && err == nil {
		err = ferr
	}
	switch {
	case opts.Ctx.Err() != nil:
		return opts.Ctx.Err()
	case err == nil:
		return nil
	}
	return redisError(conn.URL, err)
}
