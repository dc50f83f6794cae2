package diagnose

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/lockcore"
)

// boundary finds the old holder's fence (--fence, --old-value, else the
// lowest LOCKCTL_FENCE of a lockctl run child of this key), says whether
// it is stale against the lease, and leaves the verdict unknown with what
// is missing; judge then asks the store.
func boundary(opts Options, rep *Report) Boundary {
	b := Boundary{Verdict: Unknown, Store: opts.Store}
	switch {
	case opts.Fence != nil:
		b.Fence, b.FenceFrom = opts.Fence, "flag"
	case opts.OldValueFence != nil:
		b.Fence, b.FenceFrom = opts.OldValueFence, "old_value"
	}
	for _, p := range rep.OldHolder.Processes {
		if p.Run == nil || p.Run.Fence == nil || p.Run.Key != rep.Key {
			continue
		}
		if b.FenceFrom == "" && (b.Fence == nil || *p.Run.Fence < *b.Fence) {
			b.Fence = p.Run.Fence
		}
		if b.Fence != nil && *p.Run.Fence == *b.Fence {
			b.PID = &p.PID
		}
	}
	if b.FenceFrom == "" && b.Fence != nil {
		b.FenceFrom = "environ"
	}
	if b.PID == nil && len(opts.PIDs) == 1 {
		b.PID = &opts.PIDs[0]
	}
	l := rep.Lease
	if l.Fence != nil {
		b.LeaseFence = l.Fence.Value
		if b.LeaseFence == nil {
			b.LeaseFence = l.Fence.Counter
		}
	}
	if b.Fence != nil {
		switch {
		case !l.Exists:
			b.Stale = ptr(true)
		case b.LeaseFence != nil && *b.Fence < *b.LeaseFence:
			b.Stale = ptr(true)
		case b.LeaseFence != nil && *b.Fence == *b.LeaseFence && l.Fence.Value != nil:
			b.Stale = ptr(false)
		}
	}
	if b.Fence == nil {
		b.Missing = append(b.Missing, "--fence N (the old holder's token), --old-value VALUE (the value it wrote), or --pid of a lockctl run child")
	}
	if opts.NewestFence == nil {
		b.Missing = append(b.Missing, "--store URL and --fence-query SQL (the newest fence the store accepted)")
	}
	switch {
	case b.Fence == nil:
		b.Reason = "the old holder's fence is not known"
	case opts.NewestFence == nil:
		b.Reason = "no write boundary was given to compare the fence with"
	}
	return b
}

// judge asks the store for its newest fence (even without the old
// holder's: a bad query is refused either way) and gives the verdict.
func judge(ctx context.Context, opts Options, b *Boundary) error {
	newest, err := opts.NewestFence(ctx)
	if err != nil {
		return err
	}
	b.StoreFence = newest
	switch {
	case b.Fence == nil:
	case newest != nil && *newest > *b.Fence:
		b.Verdict = Refused
		b.Reason = fmt.Sprintf("the store has accepted fence %d, newer than %d: a conditional write with %d changes nothing", *newest, *b.Fence, *b.Fence)
	case newest != nil:
		b.Verdict = Accepted
		b.Reason = fmt.Sprintf("the store's newest fence is %d, not newer than %d: the old holder's write would land", *newest, *b.Fence)
	default:
		b.Verdict = Accepted
		b.Reason = fmt.Sprintf("the store has accepted no fence yet: a write with %d would land", *b.Fence)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// Unsafe reports whether the report shows a stale holder whose next write
// would be accepted; with failOnUnknown, also one that cannot be ruled out
// (the verdict is unknown, or it is not known to be stale).
func (r *Report) Unsafe(failOnUnknown bool) bool {
	b := r.Boundary
	if b.Stale != nil && !*b.Stale {
		return false
	}
	if b.Verdict == Accepted && b.Stale != nil {
		return true
	}
	return failOnUnknown && b.Verdict != Refused
}

// advice is the report's last line: who the old holder is, what it waits
// on and for how long, and what its next write does.
func advice(r *Report) string {
	b := r.Boundary
	who := "the old holder"
	var p *Process
	if b.PID != nil {
		for i := range r.OldHolder.Processes {
			if r.OldHolder.Processes[i].PID == *b.PID {
				p = &r.OldHolder.Processes[i]
			}
		}
	}
	switch {
	case p != nil:
		who += fmt.Sprintf(" (pid %d)", p.PID)
	case b.Fence != nil:
		who += fmt.Sprintf(" (fence %d)", *b.Fence)
	}
	if b.Stale != nil && !*b.Stale {
		return fmt.Sprintf("%s holds the current lease (fence %d): nothing is stale", strings.Replace(who, "the old holder", "the holder", 1), *b.Fence)
	}
	line := who
	if p != nil {
		line += " " + doing(p)
	}
	switch {
	case b.Verdict == Refused:
		return fmt.Sprintf("%s; it will be refused at the store (fence %d < %d)", line, *b.Fence, *b.StoreFence)
	case b.Verdict == Accepted && b.Stale == nil:
		return line + "; its next write would be ACCEPTED by the store, and whether it still holds the lease cannot be told (the lease shows no fence): check it, or fence the write"
	case b.Verdict == Accepted:
		newest := "none"
		if b.StoreFence != nil {
			newest = fmt.Sprint(*b.StoreFence)
		}
		return fmt.Sprintf("%s; its next write would be ACCEPTED (fence %d, the store's newest %s): kill it or fence the write", line, *b.Fence, newest)
	}
	return line + "; whether its next write is refused is unknown: give " + strings.Join(b.Missing, ", and ")
}

// doing says what a process is stuck in, and for how long.
func doing(p *Process) string {
	if p.State == "stopped" || p.State == "tracing_stop" {
		return "is stopped (SIGSTOP, Ctrl-Z or a debugger), alive " + msText(p.AgeMS)
	}
	if c := p.ExternalCall; c != nil {
		verb := map[string]string{"read": "blocked reading from", "write": "blocked writing to", "connect": "blocked connecting to",
			"only_connection": "waiting, likely on its one connection to"}[c.How]
		if verb == "" {
			verb = "blocked in " + c.How + " on"
		}
		if c.Redis {
			verb += " Redis at"
		}
		s := verb + " " + c.Peer
		if c.OffCPUMS != nil {
			s += " for " + msText(*c.OffCPUMS)
		}
		return "is " + s
	}
	for _, t := range p.Threads {
		if t.TID == p.PID && t.Syscall != "" && t.Syscall != "running" {
			return fmt.Sprintf("is %s in %s (alive %s)", t.State, t.Syscall, msText(p.AgeMS))
		}
	}
	return fmt.Sprintf("is %s (alive %s)", p.State, msText(p.AgeMS))
}

// msText is a duration in ms as people write it, to the second from 1s.
func msText(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d >= time.Second {
		d = d.Round(time.Second)
	}
	return lockcore.FormatDuration(d)
}
