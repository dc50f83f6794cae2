package checklist

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
)

// Observation is what the live cross-check read for one task: its keys for
// the given value, the lock's PTTL in ms (-2 no key, -1 no expiry) and
// whether the fence counter exists, with its value. The *_hex fields give
// the value's and keys' bytes in hex when they are not UTF-8
// (inspect.HexIfNotUTF8; JSON shows such bytes as U+FFFD).
type Observation struct {
	Value       string `json:"value"`
	ValueHex    string `json:"value_hex,omitempty"`
	LockKey     string `json:"lock_key"`
	LockKeyHex  string `json:"lock_key_hex,omitempty"`
	FenceKey    string `json:"fence_key"`
	FenceKeyHex string `json:"fence_key_hex,omitempty"`
	PTTLMS      int64  `json:"pttl_ms"`
	FenceExists bool   `json:"fence_exists"`
	Fence       string `json:"fence,omitempty"`
}

// Reader is the read-only part of a Redis client the cross-check uses
// (PTTL, EXISTS, GET): it never writes.
type Reader interface {
	PTTL(ctx context.Context, key string) *redis.DurationCmd
	Exists(ctx context.Context, keys ...string) *redis.IntCmd
	Get(ctx context.Context, key string) *redis.StringCmd
}

// CrossCheck compares each evaluated spec with the live keys of value
// (read-only): a spec claiming a fence counter whose key does not exist makes
// commit_check.fence-counter fail, and a live PTTL above the spec's lease (or
// no expiry at all) makes lease.matches-policy fail, both with the observed
// values. specs and r.Tasks are in the same order (as Evaluate returns them).
// It returns the first Redis error (a refused read as an *inspect.ReadError naming the command and key). With opts.Cluster, a spec whose
// templates put the lock and fence keys on two hash slots fails
// lock_key.cluster-slot with both slots, and a value that does so under
// sound templates (a brace in it) is an error wrapping lockcore.ErrCrossSlot.
func CrossCheck(ctx context.Context, rd Reader, r *Report, specs []*Spec, value string, opts Options) error {
	for i, s := range specs {
		ks, err := lockcore.NewKeySpec(s.Lock.Field, s.Lock.KeyTemplate, s.Lock.FenceTemplate, false)
		if err != nil {
			continue // lock_key.per-object already fails; there are no keys to read
		}
		k := ks.Keys(value)
		// On a cluster, a template that splits the two keys fails
		// lock_key.cluster-slot whatever the spec's lock.cluster says; a
		// value that splits them under a sound template is the caller's
		// input error.
		var slotReason string
		slotPath := "lock.key_template"
		if s.Lock.FenceTemplate != "" {
			slotPath = "lock.fence_template"
		}
		if opts.Cluster {
			if _, err := lockcore.NewKeySpec(s.Lock.Field, s.Lock.KeyTemplate, s.Lock.FenceTemplate, true); err != nil {
				slotReason = fmt.Sprintf("live: the server is a Redis Cluster and lock key %s (slot %d) and fence key %s (slot %d) are on different slots: put the value in a hash tag, e.g. lock:{field}:{{{value}}}",
					k.Lock, lockcore.Slot(k.Lock), k.Fence, lockcore.Slot(k.Fence))
			} else if err := k.SameSlot(); err != nil {
				return fmt.Errorf("value %q cannot be locked in a Redis Cluster: %w (a { or } in it changes the part of the key Redis hashes)", value, err)
			}
		}
		obs := &Observation{Value: value, ValueHex: inspect.HexIfNotUTF8(value), LockKey: k.Lock, LockKeyHex: inspect.HexIfNotUTF8(k.Lock),
			FenceKey: k.Fence, FenceKeyHex: inspect.HexIfNotUTF8(k.Fence)}
		pttl, err := rd.PTTL(ctx, k.Lock).Result()
		if err != nil {
			return refusedRead("PTTL", k.Lock, err)
		}
		obs.PTTLMS = pttlMS(pttl)
		n, err := rd.Exists(ctx, k.Fence).Result()
		if err != nil {
			return refusedRead("EXISTS", k.Fence, err)
		}
		obs.FenceExists = n == 1
		if obs.FenceExists {
			if obs.Fence, err = rd.Get(ctx, k.Fence).Result(); err != nil && !errors.Is(err, redis.Nil) {
				return refusedRead("GET", k.Fence, err)
			}
		}
		t := &r.Tasks[i]
		t.Live = obs
		lease := time.Duration(s.Lock.Lease)
		if lease == 0 {
			want, err := opts.Policy.LeaseFor(time.Duration(s.Lock.Budget), s.Lock.Mode)
			if err != nil {
				return err
			}
			lease = want.Lease
		}
		for j := range t.Items {
			it := &t.Items[j]
			switch {
			case it.ID == "lock_key.cluster-slot" && slotReason != "":
				it.Status = StatusFail
				it.Reason = slotReason
				it.Line = s.Line(slotPath)
			case it.ID == "commit_check.fence-counter" && s.Lock.Fencing == "counter" && !obs.FenceExists:
				it.Status = StatusFail
				it.Reason = fmt.Sprintf("live: the spec claims a fence counter but %s does not exist (lock %s %s)", k.Fence, k.Lock, PTTLText(obs.PTTLMS))
				it.Line = s.Line("lock.fencing")
			case it.ID == "lease.matches-policy" && obs.PTTLMS == -1:
				it.Status = StatusFail
				it.Reason = fmt.Sprintf("live: %s has no expiry (PTTL -1); the spec's lease is %s", k.Lock, fd(lease))
			case it.ID == "lease.matches-policy" && obs.PTTLMS > lease.Milliseconds():
				it.Status = StatusFail
				it.Reason = fmt.Sprintf("live: %s has PTTL %dms, above the spec's lease %s (%dms)", k.Lock, obs.PTTLMS, fd(lease), lease.Milliseconds())
			}
		}
	}
	r.Tally()
	return nil
}

// refusedRead names the command and key of a read the server refused with
// an error reply (NOPERM for the command or the key, CLUSTERDOWN), as
// inspect does (inspect.ReadError); a connection's error is returned as is.
func refusedRead(command, key string, err error) error {
	var re redis.Error
	if errors.As(err, &re) {
		return &inspect.ReadError{Command: command, Key: key, Err: err}
	}
	return err
}

// PTTLText describes a PTTL in ms as Redis reports it: "PTTL 899980ms",
// "PTTL -1, no expiry" or "PTTL -2, absent" (no key).
func PTTLText(ms int64) string {
	switch ms {
	case -2:
		return "PTTL -2, absent"
	case -1:
		return "PTTL -1, no expiry"
	}
	return fmt.Sprintf("PTTL %dms", ms)
}

// pttlMS maps go-redis' PTTL reply to Redis' convention: -2 no key, -1 no
// expiry, else the remaining ms.
func pttlMS(d time.Duration) int64 {
	if d < 0 {
		return int64(d)
	}
	return d.Milliseconds()
}
