package trial

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/lockcore"
)

// History is the trial as the renderers draw it: the workers as actors,
// their acquisitions and releases as calls of Redis, the other lock events
// and the faults as notes, in time order, the lock's holder named by its
// worker's number; the violations over their worker, else Redis (the
// store for the store's).
func (r Result) History() history.Run {
	run := history.Run{Title: fmt.Sprintf("trial of %s (seed %d)", strings.Join(r.Command, " "), r.Seed), Verdict: r.Verdict,
		EndMS: r.DurationMS, Lanes: r.Lanes, Servers: []history.Server{{Role: history.ServerLock, Name: "Redis"}}}
	for w := 1; w <= r.Workers; w++ {
		run.Actors = append(run.Actors, WorkerName(w))
	}
	holder := ""
	for _, e := range r.Events {
		s := history.Step{AtMS: e.AtMS, Actor: WorkerName(e.Worker), Server: history.ServerLock}
		switch {
		case e.Worker > 0 && (e.Event == inspect.EventAcquired || e.Event == inspect.EventTakeover || e.Event == inspect.EventHeld):
			s.Text = "acquired " + e.Key
		case e.Worker > 0 && e.Event == inspect.EventReleased:
			s.Text = "released " + e.Key
		default:
			s.Actor, s.Text = "", fmt.Sprintf("%s %s (%s)", e.Key, strings.ToLower(e.Event), WorkerName(e.Worker))
		}
		holder = ""
		switch e.Event {
		case inspect.EventHeld, inspect.EventAcquired, inspect.EventTakeover, inspect.EventRenewed, inspect.EventTTLJump:
			holder = "?"
			if e.Worker > 0 {
				holder = strconv.Itoa(e.Worker)
			}
		}
		s.Holder = holder
		run.Steps = append(run.Steps, s)
	}
	for _, f := range r.Faults {
		s := history.Step{AtMS: f.AtMS, Server: history.ServerLock, Holder: holderAt(run.Steps[:len(r.Events)], f.AtMS), Fault: f.Kind}
		if f.Worker > 0 && f.Kind != FaultExpire {
			s.Actor, s.Server = WorkerName(f.Worker), ""
		}
		what := f.Kind
		if f.DurationMS > 0 {
			what += " " + lockcore.FormatDuration(time.Duration(f.DurationMS)*time.Millisecond)
		}
		s.Text = "FAULT " + what + ": " + f.Note
		run.Steps = append(run.Steps, s)
	}
	slices.SortStableFunc(run.Steps, func(a, b history.Step) int { return cmp.Compare(a.AtMS, b.AtMS) })
	for _, v := range r.Violations {
		hv := history.Violation{Code: v.Code, AtMS: v.AtMS, Detail: v.Detail}
		switch {
		case v.Source == SourceStore:
			hv.Server = history.ServerStore
		case v.Worker <= 0:
			hv.Server = history.ServerLock
		default:
			hv.Actor = WorkerName(v.Worker)
		}
		if hv.Server == history.ServerStore && len(run.Servers) == 1 {
			run.Servers = append(run.Servers, history.Server{Role: history.ServerStore, Name: "Store"})
		}
		run.Violations = append(run.Violations, hv)
	}
	return run
}

// holderAt is the lock's holder at ms among the lock events' steps.
func holderAt(steps []history.Step, ms int64) string {
	h := ""
	for _, s := range steps {
		if s.AtMS <= ms {
			h = s.Holder
		}
	}
	return h
}
