package trial

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// planned is one fault of the schedule: its kind, when it starts (since the
// trial's start), and the worker to use when no lock holder is seen.
type planned struct {
	at       time.Duration
	kind     string
	fallback int
}

// schedule draws the faults of a trial from seed alone, so --seed replays
// the same kinds at the same times: the first after warm-up, each next one
// a gap of D/2..D (the fault duration) after the last one ended, until the
// trial's end. Instant faults (kill, expire, restart) take no time.
func schedule(seed uint64, kinds []string, fault, duration time.Duration, workers int) []planned {
	var out []planned
	if len(kinds) == 0 || workers < 1 {
		return out
	}
	rng := rand.New(rand.NewPCG(seed, 0x7472696))
	at := min(time.Second, duration/5)
	for at < duration {
		p := planned{at: at, kind: kinds[rng.IntN(len(kinds))], fallback: 1 + rng.IntN(workers)}
		out = append(out, p)
		if p.kind == FaultPause || p.kind == FaultPartition {
			at += fault
		}
		at += fault/2 + time.Duration(rng.Int64N(int64(fault/2)+1))
	}
	return out
}

// nemesis runs the schedule until ctx ends, then heals what it left broken.
func (t *trial) nemesis(ctx context.Context, plan []planned) {
	for _, p := range plan {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(t.start.Add(p.at))):
		}
		t.inject(ctx, p)
	}
}

// target is the worker a fault hits: the holder of a lock key matching
// --lock-pattern when one is seen (Jepsen's targeted nemeses), else the
// schedule's fallback.
// It waits up to targetWait for a holder to show, as a lock is often free
// for a moment between two holders.
func (t *trial) target(ctx context.Context, p planned) (int, string, string) {
	deadline := time.Now().Add(targetWait)
	for {
		for _, h := range t.sampler.holders() {
			if h.worker > 0 {
				return h.worker, h.key, "holds " + h.key
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return p.fallback, "", "no holder seen: random worker"
		}
		t.sleep(ctx, t.opts.SampleEvery)
	}
}

// targetWait is how long a fault waits for a lock holder to target.
const targetWait = 500 * time.Millisecond

// heldKey is a held lock key for the expire nemesis, waiting up to
// targetWait for one; "" when none showed.
func (t *trial) heldKey(ctx context.Context) (string, int) {
	deadline := time.Now().Add(targetWait)
	for {
		if hs := t.sampler.holders(); len(hs) > 0 {
			return hs[0].key, hs[0].worker
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", 0
		}
		t.sleep(ctx, t.opts.SampleEvery)
	}
}

func (t *trial) inject(ctx context.Context, p planned) {
	f := Fault{Kind: p.kind}
	start := time.Now() // each fault resets it to the instant it acts
	d := t.opts.FaultDuration
	switch p.kind {
	case FaultPause:
		w, key, why := t.target(ctx, p)
		f.Worker, f.Key, f.Note, f.DurationMS = w, key, why, d.Milliseconds()
		if !t.workers[w-1].pause() {
			f.Note, f.DurationMS = "worker not running", 0
			break
		}
		t.lanes.set(w, lanePaused, true)
		t.record(f, time.Now())
		t.sleep(ctx, d)
		t.workers[w-1].resume()
		t.lanes.set(w, lanePaused, false)
		return
	case FaultKill:
		w, key, why := t.target(ctx, p)
		f.Worker, f.Key, f.Note = w, key, why
		start = time.Now()
		if !t.workers[w-1].kill() {
			f.Note = "worker not running"
		}
	case FaultPartition:
		w, key, why := t.target(ctx, p)
		f.Worker, f.Key, f.Note, f.DurationMS = w, key, why, d.Milliseconds()
		t.proxies[w-1].stall(d)
		t.lanes.set(w, lanePartitioned, true)
		t.record(f, time.Now())
		t.sleep(ctx, d)
		t.proxies[w-1].heal()
		t.lanes.set(w, lanePartitioned, false)
		return
	case FaultExpire:
		f.Note = "no lock key seen"
		key, w := t.heldKey(ctx)
		start = time.Now()
		if key != "" {
			f.Key, f.Worker = key, w
			f.Note = "PEXPIRE 1ms: the key expires early"
			if err := t.client.PExpire(ctx, f.Key, time.Millisecond).Err(); err != nil {
				f.Note = fmt.Sprintf("PEXPIRE failed: %v", err)
			}
		}
	case FaultRestart:
		f.Note = "redis-server restarted empty"
		start = time.Now()
		// A begun restart runs to its end even when the trial ends meanwhile:
		// a server left down would turn the workers' stop into another fault.
		if err := t.scratch.Restart(context.WithoutCancel(ctx), restartWait); err != nil {
			f.Note = fmt.Sprintf("restart failed: %v", err)
		}
	}
	t.record(f, start)
}

// record adds f, stamped at (when the fault began).
func (t *trial) record(f Fault, at time.Time) {
	f.At, f.AtMS = rfc3339ms(at), at.Sub(t.start).Milliseconds()
	t.mu.Lock()
	t.faults = append(t.faults, f)
	t.mu.Unlock()
}

// sleep waits d or until ctx ends.
func (t *trial) sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
