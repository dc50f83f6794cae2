package trial

import (
	"time"

	"github.com/lockctl/lockctl/inspect"
)

// Phases of a Progress snapshot.
const (
	PhaseRunning  = "running"  // workers run, the nemesis injects faults
	PhaseStopping = "stopping" // SIGTERM sent, waiting up to Grace for the workers
	PhaseJudging  = "judging"  // Options.Judge queries the scratch database
)

// ProgressEvery spaces the calls of Options.Progress.
const ProgressEvery = 250 * time.Millisecond

// Progress is a snapshot of a running trial, for a live display.
type Progress struct {
	Phase string
	// Elapsed is the time since the workers started; Duration the run's
	// planned length (Options.Duration).
	Elapsed, Duration time.Duration
	// Faults is the faults injected so far, Ops the client history lines.
	Faults, Ops int
	// Violations is what is known so far: the client history judged
	// (history.CodeStaleWrite, history.CodeDuplicate) and history.CodeFenceBackwards events
	// of the lock timeline; the database's (Judge) come at the end only.
	Violations int
}

// reportProgress calls Options.Progress every ProgressEvery until the
// returned stop is called; stop waits for the last call to return.
func (t *trial) reportProgress() (stop func()) {
	if t.opts.Progress == nil {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(ProgressEvery)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				t.opts.Progress(t.progress())
			}
		}
	}()
	return func() { close(quit); <-done }
}

// setPhase names what the trial waits for now (a Phase*).
func (t *trial) setPhase(phase string) {
	t.mu.Lock()
	t.phase = phase
	t.mu.Unlock()
}

// progress takes a snapshot under t.mu; the history is judged outside it
// (ops is append-only: its first n elements never change).
func (t *trial) progress() Progress {
	t.mu.Lock()
	p := Progress{Phase: t.phase, Elapsed: time.Since(t.start), Duration: t.opts.Duration, Faults: len(t.faults), Ops: len(t.ops)}
	ops := t.ops[:len(t.ops):len(t.ops)]
	t.mu.Unlock()
	p.Violations = len(judgeHistory(ops))
	for _, e := range t.sampler.timeline() {
		if e.Event == inspect.EventFenceBackwards {
			p.Violations++
		}
	}
	return p
}
