package inspect

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
)

// SharedHolder is one holder of a semaphore or shared (read/write) lock
// (docs/layouts.md, "Semaphores and shared locks"). Times are RFC 3339
// (UTC, ms precision); durations are ms.
type SharedHolder struct {
	// Owner is the holder's token as the library hands it out: the
	// identifier (redis-semaphore, its "_<n>" suffixes folded), the token
	// (Symfony Lock), the permit id in hex (Redisson) or "<uuid>:<thread>".
	Owner string `json:"owner"`
	// OwnerHex is Owner's bytes in hex when they are not printable.
	OwnerHex string `json:"owner_hex,omitempty"`
	// Mode is "read" or "write" for a shared lock, "" for a semaphore.
	Mode string `json:"mode,omitempty"`
	// Permits is how many permits the holder takes (a MultiSemaphore's members).
	Permits int64 `json:"permits"`
	// HoldCount is a reentrant hold count (Redisson), else null.
	HoldCount *int64 `json:"hold_count,omitempty"`
	// AcquiredAt and AgeMS: the holder's acquire or last refresh, where the
	// layout scores it (redis-semaphore).
	AcquiredAt string `json:"acquired_at,omitempty"`
	AgeMS      *int64 `json:"age_ms,omitempty"`
	// ExpiresAt and TTLMS: when the holder's lease ends; TTLMS is negative
	// for a holder that expired that long ago.
	ExpiresAt string `json:"expires_at,omitempty"`
	TTLMS     *int64 `json:"ttl_ms,omitempty"`
	// Expired says the lease ended but the member is still there: the
	// library removes it at its next acquire, until then it is stale.
	Expired bool `json:"expired"`
}

// Scores a layout writes as Unix ms: later than 2001-09-09, before 2100.
const (
	minEpochMS = 1e12
	maxEpochMS = 4102444800000
)

// zmember is one zset member with its score.
type zmember struct {
	name  string
	score float64
}

// zmembers pairs a ZRANGE WITHSCORES reply; false when a score is no number.
func zmembers(items []string) ([]zmember, bool) {
	out := make([]zmember, 0, len(items)/2)
	for i := 0; i+1 < len(items); i += 2 {
		f, err := strconv.ParseFloat(items[i+1], 64)
		if err != nil || math.IsNaN(f) {
			return nil, false
		}
		out = append(out, zmember{items[i], f})
	}
	return out, true
}

// addHolder appends a holder acquired at acqMS and expiring at expMS (Unix
// ms, 0 unknown), judged by the read's clock.
func (d *detection) addHolder(owner, mode string, acqMS, expMS int64) {
	h := SharedHolder{Owner: owner, Mode: mode, Permits: 1}
	if !printable([]byte(owner)) {
		h.Owner, h.OwnerHex = "", hex.EncodeToString([]byte(owner))
	}
	now := d.nowMS()
	if acqMS > 0 {
		h.AcquiredAt = rfc3339ms(time.UnixMilli(acqMS))
		if now > 0 {
			h.AgeMS = ptr(now - acqMS)
		}
	}
	if expMS > 0 {
		h.ExpiresAt = rfc3339ms(time.UnixMilli(expMS))
		if now > 0 {
			h.TTLMS = ptr(expMS - now)
			h.Expired = expMS <= now
		}
	}
	d.lock.Holders = append(d.lock.Holders, h)
}

// nowMS is the instant the key was read (Unix ms): the server's, from
// PEXPIRETIME - PTTL, else the reader's clock; 0 unknown.
func (d *detection) nowMS() int64 {
	if d.v.PTTL >= 0 && d.v.ExpireAtMS > 0 {
		return d.v.ExpireAtMS - d.v.PTTL
	}
	return d.v.ReadAtMS
}

// inUse sets the permits in use from the live ones read. Members past the
// read bound score above every one read and expire later: when the last
// one read is live, so are they (exact unless unreadKnown is false).
func (d *detection) inUse(lastLive, unreadKnown bool) {
	var permits int64
	for _, h := range d.lock.Holders {
		if !h.Expired {
			permits += h.Permits
		}
	}
	d.lock.permitsMin = permits
	read := int64(len(d.v.Items) / 2)
	switch {
	case !d.v.Truncated:
		d.lock.PermitsInUse = ptr(permits)
	case lastLive && unreadKnown:
		d.lock.PermitsInUse = ptr(permits + max(0, d.v.Size-read))
		d.lock.permitsMin = *d.lock.PermitsInUse
	}
}

// staleHolders adds STALE_HOLDERS for members whose lease ended.
func (d *detection) staleHolders() {
	n, oldest := 0, int64(0)
	for _, h := range d.lock.Holders {
		if h.Expired {
			n++
			if h.TTLMS != nil {
				oldest = min(oldest, *h.TTLMS)
			}
		}
	}
	switch {
	case n > 0 && oldest < 0:
		d.lock.add(FindingStaleHolders, SeverityInfo, "%d of %d holders expired without a release, the oldest %s ago",
			n, len(d.lock.Holders), lockcore.FormatDuration(time.Duration(-oldest)*time.Millisecond))
	case n > 0:
		d.lock.add(FindingStaleHolders, SeverityInfo, "%d of %d holders expired without a release (their lease keys are gone)", n, len(d.lock.Holders))
	}
}

// checkShared judges a semaphore or shared lock against opts: more live
// permits than --permits is OVER_ADMITTED, and --owner is OWNED when any
// live holder has that token.
func (l *Lock) checkShared(opts Options) {
	if l.Holders == nil {
		return
	}
	if opts.Permits > 0 && l.permitsMin > opts.Permits {
		what := fmt.Sprintf("%d permits in use", l.permitsMin)
		if l.PermitsInUse == nil {
			what = fmt.Sprintf("at least %d permits in use", l.permitsMin)
		}
		l.add(FindingOverAdmitted, SeverityError, "%s, over the %d --permits allows", what, opts.Permits)
	}
	if l.OwnerCheck != "NOT_OWNED" {
		return
	}
	for _, h := range l.Holders {
		if !h.Expired && (h.Owner == string(opts.ExpectOwner) && h.Owner != "" || h.OwnerHex != "" && h.OwnerHex == hex.EncodeToString(opts.ExpectOwner)) {
			l.OwnerCheck = "OWNED"
			return
		}
	}
}

// zsetItems flattens a ZRANGE WITHSCORES reply to member, score, member,
// score...: RESP2 sends it flat with scores as strings, RESP3 as
// [member, score] pairs with scores as doubles.
func zsetItems(c *redis.Cmd) []string {
	raw, err := c.Slice()
	if err != nil {
		return nil
	}
	out := make([]string, 0, 2*len(raw))
	for _, x := range raw {
		switch e := x.(type) {
		case []any:
			if len(e) == 2 {
				out = append(out, fmt.Sprint(e[0]), scoreText(e[1]))
			}
		default:
			out = append(out, fmt.Sprint(e))
		}
	}
	return out
}

// scoreText is a RESP3 double (or a RESP2 string) as ZSCORE prints it.
func scoreText(x any) string {
	if f, ok := x.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(x)
}
