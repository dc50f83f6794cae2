package cmd

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/lockcore"
)

// redlockInspectRun is inspect over the nodes of a redis+redlock:// URL:
// every node read at once, one row per key with the quorum view and its
// nodes beneath (docs/redlock.md). Exit 3 when no node answers the read.
func redlockInspectRun(opts *InspectOptions) error {
	if opts.Search {
		return usageErrorf("--search is not offered over redis+redlock:// nodes; use --pattern '*VALUE*' (it scans every node)")
	}
	ctx := opts.Ctx
	conn, err := opts.Redlock(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	res, err := resolveKeys(opts, false) // each node is a standalone server
	if err != nil {
		return err
	}
	reader := newReader(opts, &RedisConn{}, res.fences)
	keys := res.keys
	if opts.Pattern != "" {
		reader.Light = true
		reader.MaxValueBytes = inspect.ScanMaxValueBytes
		var scanErrs []error
		keys, scanErrs, err = reader.ScanNodes(ctx, conn.Nodes, inspect.ScanOptions{Pattern: opts.Pattern, Count: opts.Count})
		if err != nil {
			return err
		}
		if allFailed(scanErrs) {
			return redisError(conn.URL, fmt.Errorf("no node answered the scan; node %s: %s", conn.Nodes[0].Addr, conn.errText(scanErrs[0])))
		}
		// A key only on a node that failed is in no row: say so, or "0 locks" looks complete.
		for i, e := range scanErrs {
			if e != nil {
				fmt.Fprintf(opts.IO.ErrOut, "lockctl: warning: node %s did not answer the scan (%s): keys only on it are not shown\n", conn.Nodes[i].Addr, conn.errText(e))
			}
		}
	}
	rep, err := reader.ReadQuorum(ctx, conn.Nodes, keys, inspect.QuorumOptions{LeaseMS: opts.RedlockLease.Milliseconds(), ErrorText: conn.errText})
	var none *inspect.NoNodeError
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &none):
		return redisError(conn.URL, fmt.Errorf("no node answered; node %s: %s", none.Addr, conn.errText(none.Err)))
	case err != nil:
		return redisError(conn.URL, err)
	}
	for i := range rep.Locks {
		if l := &rep.Locks[i]; l.OwnerCheck == "OWNED" && l.Quorum.State != inspect.QuorumHeld {
			l.OwnerCheck = "NOT_OWNED" // the owner on a minority holds nothing
		}
	}
	return printQuorumReport(opts, rep, opts.Pattern != "")
}

// allFailed reports whether every node's error is set.
func allFailed(errs []error) bool {
	for _, err := range errs {
		if err == nil {
			return false
		}
	}
	return len(errs) > 0
}

func printQuorumReport(opts *InspectOptions, rep inspect.QuorumReport, summary bool) error {
	var err error
	if opts.Format == formatJSONL {
		err = writeJSONL(opts.IO.Out, rep.Locks, rep.Summary)
	} else {
		err = opts.Printer.Print(rep, func(t *TableView) { quorumTable(t, rep, summary) })
	}
	if err != nil {
		return err
	}
	for _, l := range rep.Locks {
		if l.OwnerCheck == "NOT_OWNED" {
			return checkFailed()
		}
	}
	return opts.failed(rep.Summary)
}

func quorumTable(t *TableView, rep inspect.QuorumReport, summary bool) {
	st := t.Styles()
	cols, rows := quorumRows(rep.Locks)
	if len(rows) > 0 {
		t.Objects(cols, rows)
	}
	for _, l := range rep.Locks {
		for _, f := range l.Findings {
			t.Line("%s %s %s: %s; %s", st.Level(string(f.Severity)), f.Code, oneLineText(l.Key), oneLineText(f.Message), f.Reason)
		}
	}
	if summary {
		t.Line("%s", summaryLine(rep.Summary))
	}
}

// quorumRows is the pure row builder of inspect over Redlock nodes: per key
// a row with the quorum (state, owner, held/N, validity), then one row per
// node (holds the quorum's owner, another owner, a minority owner's key
// when nobody holds a majority, free, or down; its owner and TTL).
func quorumRows(locks []inspect.QuorumLock) ([]Column, [][]string) {
	header := []Column{{Name: "key / node", Shorten: true}, {Name: "quorum", Rank: 1}, {Name: "owner", Rank: 5},
		{Name: "held", Rank: 3}, {Name: "ttl / validity", Rank: 4}, {Name: "findings", Rank: 2}}
	var rows [][]string
	for _, l := range locks {
		q := l.Quorum
		owner, validity := "-", "-"
		if q.Owner != nil {
			owner = ownerCell(*q.Owner, "")
		}
		if q.ValidityMS != nil {
			validity = lockcore.FormatDuration(time.Duration(*q.ValidityMS) * time.Millisecond)
		}
		held := fmt.Sprintf("%d/%d", q.Held, q.Nodes)
		if q.Answered < q.Nodes {
			held += fmt.Sprintf(" (%d up)", q.Answered)
		}
		codes := make([]string, len(l.Findings))
		for i, f := range l.Findings {
			codes[i] = f.Code
		}
		rows = append(rows, []string{oneLineText(l.Key), strings.ReplaceAll(q.State, "_", " "), owner, held, validity, cmp.Or(strings.Join(codes, ","), "-")})
		for _, n := range l.Nodes {
			rows = append(rows, nodeRow(n, q))
		}
	}
	return header, rows
}

func nodeRow(n inspect.NodeView, q inspect.Quorum) []string {
	state, owner, ttl := "free", "-", "-"
	switch {
	case n.Error != "":
		state = "down"
	case n.Exists && q.Owner != nil && (n.Owner == *q.Owner || "hex:"+n.OwnerHex == *q.Owner):
		state = "holds"
	case n.Exists && q.Owner != nil:
		state = "other"
	case n.Exists:
		state = "minority"
	}
	if n.Exists {
		owner = ownerCell(n.Owner, n.OwnerHex)
		ttl = "none"
		if n.PTTLMS >= 0 {
			ttl = lockcore.FormatDuration(time.Duration(n.PTTLMS) * time.Millisecond)
		}
	}
	return []string{"  " + n.Addr, state, owner, "", ttl, ""}
}

// ownerCell is an owner as the table shows it: escaped, hex:... for bytes
// that are not text, cut at 40 characters.
func ownerCell(owner, ownerHex string) string {
	s := oneLineText(owner)
	if s == "" && ownerHex != "" {
		s = "hex:" + ownerHex
	}
	if r := []rune(s); len(r) > 40 {
		s = string(r[:39]) + "…"
	}
	return cmp.Or(s, "-")
}
