package simulate

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/history"
)

// normalize fills defaults: send keys "<actor>-send-<n>" in file order,
// the server as the actor of failover, clock_jump, restart and a node's
// crash, fence source (store over Redlock nodes: there is no single INCR)
// and check.
func (sc *Scenario) normalize() {
	if sc.FenceSource == "" {
		sc.FenceSource = FenceRedis
		if sc.Nodes > 1 {
			sc.FenceSource = FenceStore
		}
	}
	if sc.Check == "" {
		sc.Check = CheckNone
	}
	sends := map[string]int{}
	steps := make([]Step, len(sc.Steps))
	copy(steps, sc.Steps)
	for i := range steps {
		st := &steps[i]
		if st.Do == ActFailover || st.Do == ActClockJump || st.Do == ActRestart || (st.Do == ActCrash && st.Actor == "" && len(st.Nodes) > 0) {
			st.Actor = serverActor
		}
		if st.Do == ActSend && st.Key == "" {
			sends[st.Actor]++
			st.Key = st.Actor + "-send-" + strconv.Itoa(sends[st.Actor])
		}
	}
	sc.Steps = steps
}

// Run plays a scenario on the virtual clock and returns its Result: the
// violations in time order, the verdict, what each guard did (a guard that
// was off is judged by replaying the run with it on), the store, notes on the
// model's limits and the timeline. Same scenario, same Result. It returns an
// error when the policy gives no valid lease.
func Run(sc Scenario) (Result, error) { return runScenario(sc, nil) }

// runScenario is Run, stopped with the stopper's context's error when it is
// done (nil: never).
func runScenario(sc Scenario, stop *stopper) (Result, error) {
	sc.normalize()
	p, err := sc.resolve()
	if err != nil {
		return Result{}, err
	}
	e := newEngine(&sc, p, sc.Guards, true)
	e.stop = stop
	if err := e.run(); err != nil {
		return Result{}, err
	}
	res := e.result()
	res.Guards = make([]GuardReport, 0, len(GuardNames))
	for gi, name := range GuardNames {
		on := sc.Guards.Get(name)
		gr := GuardReport{Guard: name, Enabled: on, Effect: EffectIdle}
		// Each guard is judged by replaying the run with it flipped.
		alt := newEngine(&sc, p, sc.Guards.With(name, !on), true)
		alt.stop = stop
		if err := alt.run(); err != nil {
			return Result{}, err
		}
		n := len(alt.violations)
		switch {
		case on && n > len(res.Violations):
			gr.Effect, gr.Note = EffectContained, e.actedNote[gi]
			if res.Verdict == history.VerdictSafe {
				gr.Effect = EffectSaved
			}
		case !on && n < len(res.Violations):
			gr.Effect, gr.Note = EffectWouldContain, alt.actedNote[gi]
			if n == 0 {
				gr.Effect = EffectWouldSave
			}
		}
		res.Guards = append(res.Guards, gr)
	}
	res.Notes = notes(&sc, &res, stop)
	if stop.stopped() {
		return Result{}, stop.ctx.Err()
	}
	return res, nil
}

func (e *engine) result() Result {
	vs := e.violations
	if vs == nil {
		vs = []Violation{}
	}
	slices.SortStableFunc(vs, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.AtMS, b.AtMS), cmp.Compare(slices.Index(Codes, a.Code), slices.Index(Codes, b.Code)), cmp.Compare(a.Actor, b.Actor))
	})
	res := Result{
		Scenario: e.sc.Name, Nodes: len(e.nodes), Verdict: history.VerdictSafe, Violations: vs,
		Lease: LeaseReport{LeaseMS: e.p.lease, Renewable: e.p.renewable, RenewEveryMS: e.p.renewEvery,
			BudgetMS: e.p.budget, RenewBoundMS: e.p.bound, MarginMS: e.p.margin, Mode: string(e.p.mode)},
		FenceSource: e.sc.FenceSource, Check: e.sc.Check,
		Store: StoreReport{HighestFence: e.storeHighest, Accepted: e.accepted, Rejected: e.rejected,
			StaleAccepted: e.staleAccepted, Correct: e.staleAccepted == 0, Effects: e.effects},
		Events: e.events, EndMS: e.now, Lanes: e.lanes, Actors: []string{},
	}
	if len(vs) > 0 {
		res.Verdict = history.VerdictUnsafe
	}
	for _, a := range e.actors {
		if !a.server {
			res.Actors = append(res.Actors, a.name)
		}
	}
	if res.Events == nil {
		res.Events = []Event{}
	}
	return res
}

// notes are the honest limits and lessons of a run, in a fixed order.
func notes(sc *Scenario, res *Result, stop *stopper) []string {
	out := []string{}
	has := func(do Action) bool {
		return slices.ContainsFunc(sc.Steps, func(s Step) bool { return s.Do == do })
	}
	codes := map[string]bool{}
	for _, v := range res.Violations {
		codes[v.Code] = true
	}
	twoHolders := codes[history.CodeOverlap] || codes[history.CodeLockLost]
	if sc.Check == CheckTTL && slices.ContainsFunc(res.Events, func(e Event) bool { return e.Kind == "write" && strings.Contains(e.Note, "stale view") }) {
		out = append(out, "the TTL check passed before the pause: a check right before the write does not help when the pause falls between the check and the write reaching the store; only the write boundary (fencing) can refuse it (Kleppmann 2016)")
	}
	if sc.Nodes > 1 {
		out = append(out, redlockNotes(sc, res, has)...)
	} else if has(ActClockJump) {
		out = append(out, "leases assume a bounded clock error: a server clock jump ends every lease early and no client-side guard can see it")
	}
	if has(ActFailover) {
		out = append(out, "leases assume durable lock state: Redis replicates asynchronously, so a failover can lose an acknowledged lock and hand it out twice")
		if sc.FenceSource != FenceStore {
			out = append(out, durableFenceNote(*sc, stop))
		}
	}
	if sc.Guards.Fencing && twoHolders && res.Store.Correct && res.Store.Rejected > 0 {
		out = append(out, "two processes held the lock, yet fencing kept the store's writes correct: the write boundary refused the older fence")
	}
	if i := slices.IndexFunc(res.Events, func(e Event) bool { return e.Kind == "crash" && e.Actor != serverActor }); i >= 0 {
		crash := res.Events[i]
		for _, e := range res.Events[i+1:] {
			if e.Kind == "acquire" && e.OK {
				out = append(out, fmt.Sprintf("take-over came %s after %s crashed: its key lived up to one lease (%s)", fmtMS(e.AtMS-crash.AtMS), crash.Actor, fmtMS(res.Lease.LeaseMS)))
				break
			}
		}
		if !sc.Checkpoints && has(ActSend) {
			out = append(out, "without checkpoints the next holder starts over and repeats the sends; --checkpoints makes it resume")
		}
	}
	return out
}

// durableFenceNote replays a failover run with a durable fence source and
// says what the store would have done.
func durableFenceNote(sc Scenario, stop *stopper) string {
	const lead = "the fence counter lived in Redis and went back with the failover"
	sc.FenceSource = FenceStore
	p, err := sc.resolve()
	if err != nil {
		return lead
	}
	e := newEngine(&sc, p, sc.Guards, true)
	e.stop = stop
	if e.run() != nil {
		return lead
	}
	switch {
	case e.staleAccepted > 0:
		return lead + "; even with a durable fence source (--fence-source store) this run's store accepts a stale write"
	case e.rejected > 0:
		return lead + "; with a durable fence source (--fence-source store) fencing keeps the store's writes correct: " + e.actedNote[gFencing]
	}
	return lead + "; with a durable fence source (--fence-source store) the store's writes stay correct"
}
