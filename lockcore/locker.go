package lockcore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The scripts hash (SHA-1, for EVALSHA) on first use, not at every lockctl
// start.
var (
	//go:embed scripts/acquire.lua
	acquireLua    string
	acquireScript = lazyScript(acquireLua)
	//go:embed scripts/renew.lua
	renewLua    string
	renewScript = lazyScript(renewLua)
	//go:embed scripts/release.lua
	releaseLua    string
	releaseScript = lazyScript(releaseLua)
	//go:embed scripts/release_dump.lua
	releaseDumpLua    string
	releaseDumpScript = lazyScript(releaseDumpLua)
)

func lazyScript(src string) func() *redis.Script {
	return sync.OnceValue(func() *redis.Script { return redis.NewScript(src) })
}

var (
	// ErrNotObtained means the lock key exists: someone else holds it.
	// Acquire wraps it in a *HeldError that says by whom.
	ErrNotObtained = errors.New("lock not obtained")
	// ErrNotHeld means the lock is no longer ours: it expired or another
	// owner holds it. Renew and Release return it.
	ErrNotHeld = errors.New("lock not held")
)

// FenceCounterError is returned by Acquire when the fence counter cannot be
// incremented: it holds no integer, is at 2^63-1, or is another type. No key
// is written. Reason is Redis's error.
type FenceCounterError struct {
	Key    string
	Reason string
}

func (e *FenceCounterError) Error() string {
	return fmt.Sprintf("fence counter %q cannot be incremented (%s); it must hold an integer above every fence already issued", e.Key, e.Reason)
}

// HeldError is returned by Acquire when the key exists. It matches
// ErrNotObtained with errors.Is.
type HeldError struct {
	Key string
	// Type is the Redis type at the key ("string" for a lock).
	Type string
	// Value is the holder's value when Type is "string": its first
	// HeldValueBytes bytes (all of it when Size is not larger).
	Value string
	// Size is the holder's value's length in bytes (STRLEN) when Type is "string".
	Size int64
	// PTTL is the holder's remaining TTL; -1 ms means no expiry.
	PTTL time.Duration
}

func (e *HeldError) Error() string {
	if e.Truncated() {
		return fmt.Sprintf("lock %q is held (value of %d bytes beginning %q, PTTL %dms)", e.Key, e.Size, e.Value, e.PTTL.Milliseconds())
	}
	return fmt.Sprintf("lock %q is held (value %q, PTTL %dms)", e.Key, e.Value, e.PTTL.Milliseconds())
}

// Truncated says Value is only the first HeldValueBytes bytes of the holder's value.
func (e *HeldError) Truncated() bool { return e.Size > int64(len(e.Value)) }

// HeldValueBytes bounds the bytes of a holder's value Acquire reads: a
// value of 100 MB costs 256 bytes, however often run --wait retries.
const HeldValueBytes = 256

// Is makes errors.Is(err, ErrNotObtained) true.
func (e *HeldError) Is(target error) bool { return target == ErrNotObtained }

// UnsureAcquireError is returned by Acquire when its call failed after it
// may have reached the server (a timeout, a dropped connection, ctx ended):
// the script may have run, or still be on its way, and take the lock for
// Owner. Acquire looked for that lock at once: Released says it found and
// released it (owner-checked). Otherwise the lock may still appear and stay
// until its lease ends; CheckErr, if set, is why Acquire could not look. It
// unwraps to the call's error.
type UnsureAcquireError struct {
	Key      string
	Owner    string
	Lease    time.Duration
	Released bool
	CheckErr error
	Err      error
}

func (e *UnsureAcquireError) Error() string {
	if e.Released {
		return fmt.Sprintf("%v (the acquire had run on the server: its lock, owner %s, was released)", e.Err, e.Owner)
	}
	looked := "it was not there yet"
	if e.CheckErr != nil {
		looked = fmt.Sprintf("looking for it failed: %v", e.CheckErr)
	}
	return fmt.Sprintf("%v (the acquire may still run on the server and hold %q for owner %s for up to %s; %s; lockctl unlock --key %q --owner %s frees it)",
		e.Err, e.Key, e.Owner, FormatDuration(e.Lease), looked, e.Key, e.Owner)
}

func (e *UnsureAcquireError) Unwrap() error { return e.Err }

// unsureCheckTimeout bounds the look for a lock an unsure acquire may have
// taken (the caller's ctx may be what ended).
const unsureCheckTimeout = time.Second

// mayHaveRun reports whether a failed call may still have reached the
// server: no reply came (a timeout, a broken connection, ctx ended), as
// opposed to an error reply or a call never sent (a failed dial).
func mayHaveRun(err error) bool {
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// releaseUnsure looks for the lock an unsure acquire (err) may have taken
// for owner and releases it; it returns an *UnsureAcquireError.
func (lk *Locker) releaseUnsure(ctx context.Context, key, owner string, lease time.Duration, err error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unsureCheckTimeout)
	defer cancel()
	e := &UnsureAcquireError{Key: key, Owner: owner, Lease: lease, Err: err}
	v, getErr := lk.client.Get(ctx, key).Result()
	if errors.Is(getErr, redis.Nil) {
		return e // not there (yet)
	}
	if getErr != nil {
		e.CheckErr = getErr
		return e
	}
	if _, o, perr := ParseValue(v); perr != nil || o != owner {
		return e // another holder's: ours may still come after it
	}
	if relErr := lk.ReleaseValue(ctx, key, v); relErr != nil && !errors.Is(relErr, ErrNotHeld) {
		e.CheckErr = relErr
		return e
	}
	e.Released = true
	return e
}

// Client is the part of a go-redis client the Locker needs; *redis.Client,
// *redis.ClusterClient, *redis.Ring and redis.UniversalClient all satisfy it.
type Client interface {
	redis.Scripter
	Get(ctx context.Context, key string) *redis.StringCmd
}

// Locker acquires fenced, owner-checked locks (see scripts/*.lua).
type Locker struct {
	client Client
}

// NewLocker returns a Locker on client.
func NewLocker(client Client) *Locker { return &Locker{client: client} }

// Lock is one acquisition: the keys, the owner token and the fencing token.
type Lock struct {
	locker *Locker
	Keys   Keys
	// Owner is the 128-bit random owner token (32 hex characters).
	Owner string
	// Fence is the fencing token, issued by INCR on Keys.Fence, or, when
	// that counter is missing (first use, an empty restart, an eviction),
	// the server's TIME in µs since the epoch: above the tokens a lost
	// counter issued while the server's clock does not go back
	// (docs/fencing.md). A write boundary that refuses lower values stops
	// stale writers (Kleppmann 2016); store it in a signed 64-bit column.
	Fence int64
	// Lease is the TTL set on acquire and on each renewal.
	Lease time.Duration
	// AcquiredAt is the local (monotonic) time the acquire call was sent: the
	// lease is provably ours until AcquiredAt + Lease − CancelMargin(Lease).
	AcquiredAt time.Time
}

// errorReply is the text of a Redis error reply err carries, or "". A
// script's error_reply may come back with the script's location appended
// ("... script: <sha>, on @user_script:12."), which is cut.
func errorReply(err error) string {
	var re redis.Error
	if !errors.As(err, &re) {
		return ""
	}
	msg, _, _ := strings.Cut(re.Error(), " script: ")
	return msg
}

// Value returns the exact bytes stored at the lock key: "<fence>:<owner>".
func (l *Lock) Value() string { return FormatValue(l.Fence, l.Owner) }

// Acquire takes the lock at keys.Lock for one lease with a fresh owner token:
// SET NX PX plus INCR of the fence counter (started at the server's TIME in
// µs when missing, see Lock.Fence) in one script. The lease is sent in
// ms and must be at least 1 ms. It returns a *HeldError (errors.Is
// ErrNotObtained) when the key exists, a *FenceCounterError when the fence
// counter cannot be incremented, an *UnsureAcquireError when the call may
// have run without its reply arriving (the lock it may have taken is looked
// for and released), or the client's error.
func (lk *Locker) Acquire(ctx context.Context, keys Keys, lease time.Duration) (*Lock, error) {
	if lease < time.Millisecond {
		return nil, fmt.Errorf("lease %s is under 1ms", lease)
	}
	owner := NewOwnerToken()
	start := time.Now()
	res, err := acquireScript().Run(ctx, lk.client, []string{keys.Lock, keys.Fence}, owner, lease.Milliseconds(), HeldValueBytes).Result()
	if reason, ok := strings.CutPrefix(errorReply(err), "BADFENCE "); ok {
		return nil, &FenceCounterError{Key: keys.Fence, Reason: reason}
	}
	if err != nil && mayHaveRun(err) {
		return nil, lk.releaseUnsure(ctx, keys.Lock, owner, lease, err)
	}
	if err != nil {
		return nil, err
	}
	if fence, ok := res.(int64); ok {
		return &Lock{locker: lk, Keys: keys, Owner: owner, Fence: fence, Lease: lease, AcquiredAt: start}, nil
	}
	arr, _ := res.([]any)
	if len(arr) != 2 && len(arr) != 4 {
		return nil, fmt.Errorf("acquire script returned %.200v", res)
	}
	pttl, _ := arr[0].(int64)
	held := &HeldError{Key: keys.Lock, PTTL: time.Duration(pttl) * time.Millisecond}
	held.Type, _ = arr[1].(string)
	if len(arr) == 4 {
		held.Size, _ = arr[2].(int64)
		held.Value, _ = arr[3].(string)
	}
	return nil, held
}

// Renew sets the lock's TTL back to the full lease if this owner still holds
// it (owner-checked PEXPIRE; never adds to the remaining TTL, never re-creates
// a missing key). It returns ErrNotHeld when the key is gone or another owner
// holds it, or the client's error; on success the lease counts from the
// moment the call was sent.
func (l *Lock) Renew(ctx context.Context) error {
	sent, err := l.renew(ctx)
	if err == nil {
		l.AcquiredAt = sent
	}
	return err
}

// renew runs the renewal script without touching l (the Keeper applies the
// send time itself) and returns when the call was sent.
func (l *Lock) renew(ctx context.Context) (time.Time, error) {
	sent := time.Now()
	n, err := renewScript().Run(ctx, l.locker.client, []string{l.Keys.Lock}, l.Value(), l.Lease.Milliseconds()).Int64()
	if err != nil {
		return sent, err
	}
	if n != 1 {
		return sent, ErrNotHeld
	}
	return sent, nil
}

// Release deletes the lock if this owner still holds it (owner-checked
// delete). It returns ErrNotHeld when the key is gone or another owner holds
// it, or the client's error. The fence counter is never touched.
func (l *Lock) Release(ctx context.Context) error {
	return l.locker.ReleaseValue(ctx, l.Keys.Lock, l.Value())
}

// ReleaseValue deletes key only if it holds exactly value (raw bytes
// compared). It returns ErrNotHeld otherwise, or the client's error.
func (lk *Locker) ReleaseValue(ctx context.Context, key, value string) error {
	return lk.deleteIf(ctx, releaseScript(), key, value)
}

// ReleaseDump deletes key only while its DUMP (type and contents, not the
// TTL) is exactly dump, compared and deleted in one script: the forced
// delete of a key that holds no lock string, which deletes only what was
// shown. It returns ErrNotHeld when the key is gone or has changed, or the
// client's error (an ACL that refuses DUMP).
func (lk *Locker) ReleaseDump(ctx context.Context, key, dump string) error {
	return lk.deleteIf(ctx, releaseDumpScript(), key, dump)
}

// deleteIf runs a compare-and-delete script on key with its expected
// contents: 1 means deleted, anything else ErrNotHeld.
func (lk *Locker) deleteIf(ctx context.Context, script *redis.Script, key, expected string) error {
	n, err := script.Run(ctx, lk.client, []string{key}, expected).Int64()
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrNotHeld
	}
	return nil
}

// ValidUntil is the last local instant the lease is provably held: the send
// time of the last successful acquire/renew + Lease − CancelMargin(Lease).
func (l *Lock) ValidUntil() time.Time {
	return l.AcquiredAt.Add(l.Lease - CancelMargin(l.Lease))
}
