package simulate

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// faults applies pauses, partitions, crashes, failovers and clock jumps at
// their times, each after the steps due before it (awaitSteps).
func (r *liveRun) faults(steps []liveStep, byName map[string]*liveActor) {
	var wakes sync.WaitGroup
	defer wakes.Wait()
	for _, st := range steps {
		if !r.sleepUntil(r.real(st.AtMS)) || !r.awaitSteps(st) {
			return
		}
		r.fault(st.Step, byName[st.Actor], &wakes)
		r.mu.Lock()
		r.applied++
		r.mu.Unlock()
	}
}

func (r *liveRun) fault(st Step, a *liveActor, wakes *sync.WaitGroup) {
	switch st.Do {
	case ActPause:
		// Times are the scheduled ones, so a pause that starts as another
		// ends is not taken for one inside it. Such a pause first waits for
		// the wake-up to be done, in-flight step included, as in the model;
		// a crashed process is not paused.
		start := r.real(st.AtMS)
		if !r.await(time.Time{}, func() bool { return a.crashed || !(a.frozen && !start.Before(a.pausedUntil)) }) {
			return
		}
		r.mu.Lock()
		crashed := a.crashed
		r.mu.Unlock()
		if crashed {
			return
		}
		r.stopRenewer(a) // a frozen process renews nothing
		r.mu.Lock()
		// As in the model, a pause that comes during a pause adds to it;
		// the wake-up already waiting waits for the new end.
		nested := start.Before(a.pausedUntil)
		if nested {
			a.pausedUntil = a.pausedUntil.Add(r.dur(st.ForMS))
			a.pauses[len(a.pauses)-1][1] = a.pausedUntil
		} else {
			a.frozen, a.woke = a.inSection && a.lock != nil, false
			a.pauseStart, a.pausedUntil = start, start.Add(r.dur(st.ForMS))
			a.pauses = append(a.pauses, [2]time.Time{start, a.pausedUntil})
		}
		lock := a.lock
		r.mu.Unlock()
		if lock != nil && !nested {
			client := partClient{UniversalClient: r.o.Client, r: r, a: a}
			v, err := client.Get(r.ctx, r.keys.Lock).Result()
			r.mu.Lock()
			a.checkedOK = err == nil && v == lock.Value()
			r.mu.Unlock()
		}
		r.event(a.name, "pause", true, 0, "process frozen for "+fmtMS(st.ForMS))
		if nested {
			return
		}
		wakes.Go(func() {
			for {
				p, until := r.paused(a)
				if !p {
					break
				}
				if !r.sleepUntil(until) {
					return
				}
			}
			// A step due at the wake-up instant thaws after it runs.
			r.mu.Lock()
			if r.wakeInFlightLocked(a) {
				a.inFlight = true
			}
			r.mu.Unlock()
			r.woke(a)
			r.thaw(a, false)
		})
	case ActPartition:
		until := time.Now().Add(r.dur(st.ForMS))
		r.mu.Lock()
		a.partUntil = maxTime(a.partUntil, until)
		r.mu.Unlock()
		r.event(a.name, "partition", true, 0, "cut off from Redis for "+fmtMS(st.ForMS))
		wakes.Go(func() {
			if !r.sleepUntil(until) {
				return
			}
			r.mu.Lock()
			healed := a.partUntil.Equal(until) && !a.crashed // the partition that ends last
			r.mu.Unlock()
			if healed {
				r.event(a.name, "heal", true, 0, a.name+" can reach Redis again")
			}
		})
	case ActCrash:
		r.mu.Lock()
		crashed := a.crashed
		r.mu.Unlock()
		if crashed { // killed once
			return
		}
		r.stopRenewer(a)
		r.mu.Lock()
		a.crashed = true
		r.endSectionLocked(a, time.Now())
		r.mu.Unlock()
		r.event(a.name, "crash", true, 0, "process killed; its key stays until it expires")
	case ActFailover:
		r.failover(st)
	case ActClockJump:
		pttl, _ := r.o.Client.PTTL(r.ctx, r.keys.Lock).Result()
		v, _ := r.o.Client.Get(r.ctx, r.keys.Lock).Result()
		left := pttl - r.dur(st.ByMS)
		if left > 0 {
			r.o.Client.PExpire(r.ctx, r.keys.Lock, left)
		} else {
			r.o.Client.Del(r.ctx, r.keys.Lock)
		}
		r.mu.Lock()
		r.jumped += r.dur(st.ByMS)
		if g := r.grantOfLocked(v); g != nil && pttl > 0 {
			g.expires = time.Now().Add(max(left, 0))
			r.snapLocked(r.real(st.AtMS), left > 0, v, g.expires)
		}
		r.mu.Unlock()
		r.event(serverActor, "clock_jump", true, 0, "emulated: the key's TTL is cut by "+fmtMS(st.ByMS))
	}
}

// released records that a's release step deleted the key, which held v.
func (r *liveRun) released(a *liveActor, v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v == a.lock.Value() {
		a.grant.releasedAt = time.Now()
	}
	r.snapLocked(a.stepAt, false, "", time.Time{})
}

// snapLocked records the lock state as of at (a failover restores it); r.mu
// must be held.
func (r *liveRun) snapLocked(at time.Time, present bool, value string, expires time.Time) {
	if r.failovers {
		r.snaps = append(r.snaps, liveSnap{at: at, present: present, value: value, expires: expires, counter: r.counter, jumped: r.jumped})
	}
}

// stampLocked is when a change a made at t counts as made on the model's
// clock (in real time): for failover snapshots (compared with the
// failover's time less the replication lag), the grant and renewal times
// renewLoop counts from, and the end of cancelled work. It is the step's
// time (stepAt) for a change its step made at once (byStep), else t less
// the scheduling jitter a's steps have gathered, which the model does not
// have. r.mu must be held.
func (r *liveRun) stampLocked(a *liveActor, t time.Time, byStep bool) time.Time {
	if byStep {
		return a.stepAt
	}
	return t.Add(-(a.shift - a.modelShift))
}

// failover emulates a replica's promotion on the one server: as in the
// model, the lock and fence counter go back to what the run had written one
// replication lag (default 1 s) ago, the counter only with the fence in
// Redis (fence_source redis). A lock acquired or renewed since is lost, and
// a later acquire may get a fence already issued (history.CodeFenceBackwards).
func (r *liveRun) failover(st Step) {
	lag := r.sc.ReplicationLagMS
	if lag <= 0 {
		lag = 1000
	}
	// On the model's clock: the snapshot at or last before the cut.
	at := r.real(st.AtMS)
	cut := at.Add(-r.dur(lag))
	r.mu.Lock()
	restored := r.snaps[0]
	for _, sn := range r.snaps {
		if !sn.at.After(cut) && !sn.at.Before(restored.at) {
			restored = sn
		}
	}
	// The jumps since the snapshot moved the server's clock on.
	restored.expires = restored.expires.Add(-(r.jumped - restored.jumped))
	restored.jumped = r.jumped
	r.mu.Unlock()
	now := time.Now()
	present := restored.present && restored.expires.After(now)
	value, pttl, counterArg := "", int64(0), ""
	if present {
		value, pttl = restored.value, max(restored.expires.Sub(now).Milliseconds(), 1)
	}
	durable := r.sc.FenceSource == FenceStore
	if !durable {
		counterArg = strconv.FormatInt(restored.counter, 10)
	}
	v, err := failoverScript.Run(r.ctx, r.o.Client, []string{r.keys.Lock, r.keys.Fence}, value, pttl, counterArg).Text()
	if err != nil && !errors.Is(err, redis.Nil) {
		r.event(serverActor, "failover", false, 0, "emulation failed: "+err.Error())
		return
	}
	lost := ""
	r.mu.Lock()
	if g := r.grantOfLocked(v); g != nil && (!present || restored.value != v) {
		g.lostAt = now
		lost = g.actor + "'s lock"
	}
	if g := r.grantOfLocked(restored.value); present && g != nil {
		// Its own key put back with an older TTL ends it sooner.
		if restored.value != v {
			if !g.lostAt.IsZero() {
				g.gaps = append(g.gaps, [2]time.Time{g.lostAt, now})
			}
			g.lostAt, g.releasedAt = time.Time{}, time.Time{}
		}
		g.expires = restored.expires
	}
	if !durable {
		r.counter = restored.counter
	}
	r.snapLocked(at, present, restored.value, restored.expires)
	counter := r.counter
	r.mu.Unlock()
	note := "emulated: writes of the last " + fmtMS(lag) + " are lost"
	if lost != "" {
		note += ": " + lost
	}
	if durable {
		note += "; the fence counter is durable"
	} else {
		note += "; the fence counter is back at " + strconv.FormatInt(counter, 10)
	}
	r.event(serverActor, "failover", true, 0, note)
}
