package inspect

import (
	"encoding/hex"
	"math"
	"strconv"
)

// The members of a declared zset, list or set layout (docs/layouts.md, "A
// hash, a zset, a list and a set"): every member a holder.

// matchMembers matches every member of a zset, list or set, and a zset's
// scores against the layout's unit; a layout with a write member needs a
// holder besides it.
func (d *Declared) matchMembers(v Value, keep bool) (map[string]string, bool) {
	step := d.step()
	var first map[string]string
	holders := 0
	for i := 0; i+step-1 < len(v.Items); i += step {
		g, ok := groupsOf(d.member, v.Items[i], keep && first == nil)
		if !ok || d.Size > 0 && len(v.Items[i]) != d.Size {
			return nil, false
		}
		if step == 2 && !d.unleased(v.Items[i+1]) {
			if _, ok := d.scoreMS(v.Items[i+1]); !ok {
				return nil, false
			}
		}
		if v.Items[i] != d.WriteMember || d.WriteMember == "" {
			holders++
		}
		if first == nil {
			first = g
		}
	}
	return first, holders > 0
}

// step is how many items a member takes in Value.Items: 2 for a zset
// (member, score), else 1.
func (d *Declared) step() int {
	if d.Type == "zset" {
		return 2
	}
	return 1
}

// anyEvidence reports whether a member of v matches MemberEvidence.
func (d *Declared) anyEvidence(v Value) bool {
	for i := 0; i < len(v.Items); i += d.step() {
		if d.memberEvidence.MatchString(v.Items[i]) {
			return true
		}
	}
	return false
}

// unleased reports the score of a holder without a lease (UnleasedScore).
func (d *Declared) unleased(score string) bool {
	f, err := strconv.ParseFloat(score, 64)
	return d.UnleasedScore != 0 && err == nil && f == d.UnleasedScore
}

// scoreMS reads a zset score in the layout's unit as Unix ms, within
// 2001-2100 (a score out of that range is no time in that unit).
func (d *Declared) scoreMS(s string) (int64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	if d.Unit == "s" {
		f *= 1000
	}
	return int64(f), f >= minEpochMS && f < maxEpochMS
}

// declaredMembers lists a zset's, list's or set's members as holders: a
// zset's score its deadline or acquire time (and, with LeaseFromKey, the
// key's lease after it); members with the same owner group are one holder
// with that many permits; a WriteMember names the writer.
func (d *detection) declaredMembers(dl *Declared) {
	step := dl.step()
	leaseMS := d.keyLease(dl)
	writeScore, writer := d.writeScore(dl), -1
	index := map[string]int{}
	lastLive := false
	for i := 0; i+step-1 < len(d.v.Items); i += step {
		member := d.v.Items[i]
		if dl.WriteMember != "" && member == dl.WriteMember {
			continue
		}
		g, _ := groupsOf(dl.member, member, true)
		owner := member
		if o := g["owner"]; o != "" {
			owner = o
		}
		if dl.OwnerHex {
			owner = hex.EncodeToString([]byte(owner))
		}
		h, seen := index[owner]
		if seen {
			d.lock.Holders[h].Permits++
		} else {
			h = len(d.lock.Holders)
			index[owner] = h
			var acq, exp int64
			mode := ""
			if step == 2 {
				acq, exp = dl.memberTimes(d.v.Items[i+1], leaseMS)
			}
			if dl.WriteMember != "" {
				mode = "read"
				if writer < 0 && step == 2 && d.v.Items[i+1] == writeScore {
					mode, writer = "write", h
				}
			}
			d.addHolder(owner, mode, acq, exp)
		}
		lastLive = !d.lock.Holders[h].Expired
	}
	if writer >= 0 {
		d.writeAlone(writer)
	}
	switch {
	case dl.Score == "deadline":
		d.memberTTL = true
		d.inUse(lastLive, dl.WriteMember == "" || !d.v.Truncated) // the write member may be past the bound
		d.staleHolders()
	case leaseMS > 0:
		d.inUse(lastLive, true)
		d.staleHolders()
	default:
		d.inUse(lastLive, dl.Type != "zset")
	}
}

// memberTimes is a zset member's acquire and expiry time (Unix ms, 0
// unknown) from its score: its deadline, or its acquire time and, with a
// lease read from the key (leaseMS > 0), the acquire time plus the lease.
func (d *Declared) memberTimes(score string, leaseMS int64) (acq, exp int64) {
	ms, _ := d.scoreMS(score)
	switch {
	case d.unleased(score):
		return 0, 0
	case d.Score == "deadline":
		return 0, ms
	case leaseMS > 0:
		return ms, ms + leaseMS
	}
	return ms, 0
}

// keyLease is, for a LeaseFromKey layout, the key's expiry minus the
// newest score read (Value.Top: the newest past the read bound), in ms;
// 0 when the key has no expiry after it.
func (d *detection) keyLease(dl *Declared) int64 {
	if !dl.LeaseFromKey || d.v.PTTL < 0 {
		return 0
	}
	var top int64
	for _, items := range [][]string{d.v.Items, d.v.Top} {
		for i := 1; i < len(items); i += 2 {
			if ms, ok := dl.scoreMS(items[i]); ok {
				top = max(top, ms)
			}
		}
	}
	if top == 0 || d.v.ExpireAtMS <= top {
		return 0
	}
	return d.v.ExpireAtMS - top
}

// writeScore is the score of the layout's write member, or "" when it has
// none or the member was not read.
func (d *detection) writeScore(dl *Declared) string {
	for i := 0; dl.WriteMember != "" && i+1 < len(d.v.Items); i += 2 {
		if d.v.Items[i] == dl.WriteMember {
			return d.v.Items[i+1]
		}
	}
	return ""
}

// permitsLeft reads a semaphore's counter of the permits left (cv, a
// permits_counter companion): the semaphore's size is it plus the members
// taken; a negative or near-int64 counter is no size (unknown, not wrapped).
func (d *detection) permitsLeft(cv Value) {
	if n, isInt := incrInt(cv.Bytes); isInt && n >= 0 && n <= math.MaxInt64-d.v.Size {
		d.lock.Permits = ptr(n + d.v.Size)
	}
}

// writeAlone makes a live writer the lock's owner; a live writer with
// other live holders is OVER_ADMITTED: a write lock admits its holder alone.
func (d *detection) writeAlone(writer int) {
	w := d.lock.Holders[writer]
	if w.Expired {
		return
	}
	owner := []byte(w.Owner)
	if w.OwnerHex != "" {
		owner, _ = hex.DecodeString(w.OwnerHex)
	}
	d.setOwner(owner)
	live := 0
	for _, h := range d.lock.Holders {
		if !h.Expired {
			live++
		}
	}
	if live > 1 {
		d.lock.add(FindingOverAdmitted, SeverityError, "a write lock and %d other live holders at once: a write lock admits its holder alone", live-1)
	}
}
