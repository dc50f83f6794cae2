package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Verdicts of `lockctl unlock`.
const (
	UnlockOwned    = "owned"     // --owner holds the lock: deleted
	UnlockNotOwner = "not_owner" // another owner holds it: nothing deleted
	UnlockAbsent   = "absent"    // no key: nothing deleted
	UnlockChanged  = "changed"   // the value changed between the read and the delete: nothing deleted
	UnlockForced   = "forced"    // --force: deleted whatever was there
	UnlockDeclined = "declined"  // --force not confirmed: nothing deleted
)

// UnlockOptions are the inputs of `lockctl unlock`.
type UnlockOptions struct {
	IO *IOStreams
	// InTTY says whether IO.In is a terminal (a --force prompt needs one).
	InTTY   bool
	Printer *Printer
	Redis   func(context.Context) (*RedisConn, error)
	Key     string
	// KeysFor rebuilds the keys with the cluster rules (keysFor) once the
	// connection turns out to be a cluster; nil skips the check.
	KeysFor func(cluster bool) (lockcore.Keys, error)
	// Owner is the owner token (or the whole lock value) --owner gave.
	Owner string
	Force bool
	Yes   bool
}

// UnlockResult is the stable JSON shape of `lockctl unlock -o json`
// (docs/run.md). Owner and fence are parsed from a "<fence>:<owner>" value;
// other values are shown raw in value with owner "" and fence null. A key
// that is not a string has its owner as inspect detects it ("" if none).
type UnlockResult struct {
	Key string `json:"key"`
	// KeyHex is the key's bytes in hex when they are not UTF-8 (inspect.HexIfNotUTF8).
	KeyHex  string `json:"key_hex,omitempty"`
	Verdict string `json:"verdict"`
	Deleted bool   `json:"deleted"`
	// Type is the Redis type found at the key ("none" when absent).
	Type  string  `json:"type"`
	Value *string `json:"value"`
	// ValueHex is the value's bytes in hex when they are not UTF-8
	// (inspect.HexIfNotUTF8); value then shows U+FFFD.
	ValueHex string `json:"value_hex,omitempty"`
	Owner    string `json:"owner"`
	Fence    *int64 `json:"fence"`
	// PTTLMS is the remaining TTL in ms when read; -1 no expiry; null when absent.
	PTTLMS *int64 `json:"pttl_ms"`
	// ValueBytes is the value's size (STRLEN) when it is over
	// unlockValueBytes; value then shows its first unlockValueBytes bytes
	// and Truncated is true.
	ValueBytes int64 `json:"value_bytes,omitempty"`
	Truncated  bool  `json:"truncated,omitempty"`
	// dump is the DUMP of a key that is not a string, as shown: --force
	// deletes it only while it still serializes the same (lockcore's
	// Locker.ReleaseDump).
	dump string
}

// NewCmdUnlock returns `lockctl unlock`; runF replaces the run function in tests.
func NewCmdUnlock(f *Factory, runF func(*UnlockOptions) error) *cobra.Command {
	var key, owner string
	var force, yes bool
	cmd := &cobra.Command{
		Use:         "unlock (VALUE | --key KEY) (--owner TOKEN | --force)",
		Annotations: outputFormats(unlockFormats),
		Short:       "Delete a lock if its owner still holds it (writes to Redis)",
		Long: `Delete a lock.

WRITES TO REDIS: one owner-checked delete (compare the exact bytes, then DEL,
in one script; a key that is not a string: compare its DUMP). The fence
counter is never touched, so the next holder still gets a higher fencing
token.

--owner TOKEN deletes the lock only if TOKEN still holds it: TOKEN is the
owner token (LOCKCTL_OWNER of 'lockctl run') or the whole value. Values are
compared as raw bytes. A lock held by anyone else, or no lock, deletes
nothing and exits 1.

--force deletes whatever is at the key (after showing its owner, fence and
TTL) once you confirm on a terminal, or with --yes. It still deletes only
the value it showed you: if the lock changed in between, nothing is deleted.
Forcing a lock whose holder is alive lets a second holder in: its writes are
refused only by a store that checks the fencing token.

Exit codes: 0 deleted; 1 nothing deleted; 2 usage; 3 Redis unreachable.`,
		Example: `  lockctl unlock order-demo-001 --owner 5f0c2b6f3e1a4d7c9b8a6e5d4c3b2a19
  lockctl unlock --key lock:OrderId:order-demo-001 --force
  lockctl unlock order-demo-001 --force --yes -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := f.Output(unlockFormats...)
			if err != nil {
				return err
			}
			if err := emptyFlags(cmd, "key"); err != nil {
				return err
			}
			value, err := lockValue(args, key != "")
			if err != nil {
				return err
			}
			buildKeys := func(cluster bool) (lockcore.Keys, error) { return f.keysSetting(value, key, cluster) }
			keys, err := buildKeys(false)
			if err != nil {
				return err
			}
			switch {
			case force && owner != "":
				return usageErrorf("give either --owner or --force, not both")
			case !force && owner == "":
				return usageErrorf("--owner TOKEN or --force is required")
			case yes && !force:
				return usageErrorf("--yes only confirms --force")
			}
			// hex:<bytes> for an owner that is not text, as inspect --owner.
			b, err := parseOwner(owner)
			if err != nil {
				return err
			}
			if b != nil {
				owner = string(b)
			}
			opts := &UnlockOptions{
				IO: f.IO, InTTY: readerIsTerminal(f.IO.In), Printer: f.newPrinter(format), Redis: f.Redis,
				Key: keys.Lock, KeysFor: buildKeys, Owner: owner, Force: force, Yes: yes,
			}
			if runF != nil {
				return runF(opts)
			}
			return unlockRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&key, "key", "", "exact lock key, instead of VALUE and the key template")
	f.addLockCompletion(cmd)
	fl.StringVar(&owner, "owner", "", "owner that must hold the lock: the owner token (of a value <fence>:<owner>, the part after the colon; LOCKCTL_OWNER of run) or the whole stored value; hex:... for raw bytes")
	fl.BoolVar(&force, "force", false, "delete whatever holds the lock, after confirmation")
	fl.BoolVarP(&yes, "yes", "y", false, "confirm --force without a prompt")
	addKeyFlags(cmd)
	return cmd
}

func readerIsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func unlockRun(ctx context.Context, opts *UnlockOptions) error {
	if opts.Force && !opts.Yes && !opts.InTTY {
		return usageErrorf("--force asks for confirmation on a terminal; stdin is not one: add --yes to delete without asking")
	}
	start := time.Now()
	conn, err := opts.Redis(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if conn.Cluster && opts.KeysFor != nil {
		if _, err := opts.KeysFor(true); err != nil {
			return err
		}
	}
	// Connecting and reading the lock wait one --timeout together; the
	// delete, after a prompt perhaps, gets one of its own.
	cctx, cancel := context.WithDeadline(ctx, start.Add(conn.Timeout))
	defer cancel()
	res, err := readLock(cctx, conn.Client, opts.Key, opts.Force)
	if err != nil {
		return conn.callError(ctx, err)
	}

	switch {
	case res.Type == "none":
		res.Verdict = UnlockAbsent
	case opts.Force && res.Truncated:
		// forceDelete compares the exact value shown; only part of this one was read.
		return &ExitError{Code: ExitCheckFailed, Err: fmt.Errorf("nothing deleted: %s holds a value of %d bytes, over the %d bytes --force reads and compares; give the holder's token with --owner instead", oneLineText(res.Key), res.ValueBytes, unlockValueBytes)}
	case opts.Force:
		res.Verdict = UnlockDeclined
		yes := opts.Yes
		if !yes {
			var err error
			if yes, err = confirm(ctx, opts.IO, res); err != nil {
				return err
			}
		}
		if yes {
			if err := forceDelete(ctx, conn, res); errors.Is(err, lockcore.ErrNotHeld) {
				res.Verdict = UnlockChanged
			} else if err != nil {
				return deleteError(ctx, conn, opts.Key, err)
			} else {
				res.Verdict, res.Deleted = UnlockForced, true
			}
		}
	case res.Type != "string":
		res.Verdict = UnlockNotOwner
	default:
		whole, ok := ownedValue(res, opts.Owner)
		if !ok {
			res.Verdict = UnlockNotOwner
			break
		}
		rctx, cancel := context.WithTimeout(ctx, conn.Timeout)
		defer cancel()
		err := lockcore.NewLocker(conn.Client).ReleaseValue(rctx, opts.Key, whole)
		switch {
		case errors.Is(err, lockcore.ErrNotHeld) && res.Truncated:
			// The unread part may differ as well as have changed: not the owner, as far as lockctl can tell.
			res.Verdict = UnlockNotOwner
		case errors.Is(err, lockcore.ErrNotHeld):
			res.Verdict = UnlockChanged
		case err != nil:
			return deleteError(ctx, conn, opts.Key, err)
		default:
			res.Verdict, res.Deleted = UnlockOwned, true
		}
	}
	if err := opts.Printer.Print(res, func(t *TableView) {
		t.Line("%s", unlockSentence(res, t.Styles()))
		if res.Type != "none" {
			cols, rows := unlockRows(res)
			t.Objects(cols, rows)
		}
	}); err != nil {
		return err
	}
	if !res.Deleted {
		return checkFailed()
	}
	return nil
}

// deleteError is callError for the owner-checked delete: one that got no
// answer may still have run on the server, and the hint says how to look.
func deleteError(ctx context.Context, conn *RedisConn, key string, err error) error {
	e := conn.callError(ctx, err)
	var ee *ExitError
	if errors.As(e, &ee) && isTimeout(err) {
		ee.Hint = fmt.Sprintf("The delete may have run: see with lockctl inspect --key %q", key)
	}
	return e
}

// ownedBy compares raw bytes, never decoded or case-folded text (cases.md 8):
// token is the whole value or the owner part of "<fence>:<owner>".
func ownedBy(value, token string) bool {
	if value == token {
		return true
	}
	_, owner, err := lockcore.ParseValue(value)
	return err == nil && owner == token
}

// ownedValue returns the whole value token stands for and whether it may be
// the owner: for a value read whole, ownedBy decides; for one read in part
// (Truncated), token must give the value's exact size, as the whole value
// or as "<fence>:" (from the part read) plus token, and match the part
// read. The delete script then compares every byte server-side (cases.md 8).
func ownedValue(res UnlockResult, token string) (string, bool) {
	v := *res.Value
	if !res.Truncated {
		if !ownedBy(v, token) {
			return "", false
		}
		return v, true
	}
	whole := token
	if int64(len(whole)) != res.ValueBytes && res.Fence != nil {
		fence, _, _ := strings.Cut(v, ":")
		whole = fence + ":" + token
	}
	return whole, int64(len(whole)) == res.ValueBytes && strings.HasPrefix(whole, v)
}

// readLock reads type, value and PTTL of key (read-only); with force, the
// DUMP of a key that is not a string too (readOther).
func readLock(ctx context.Context, c redis.UniversalClient, key string, force bool) (UnlockResult, error) {
	res := UnlockResult{Key: key, KeyHex: inspect.HexIfNotUTF8(key)}
	var err error
	if res.Type, err = c.Type(ctx, key).Result(); err != nil {
		return res, err
	}
	if res.Type == "none" {
		return res, nil
	}
	pttl, err := c.PTTL(ctx, key).Result()
	if err != nil {
		return res, err
	}
	ms := int64(-1)
	if pttl >= 0 {
		ms = pttl.Milliseconds()
	}
	res.PTTLMS = &ms
	if res.Type != "string" {
		return readOther(ctx, c, res, force)
	}
	// STRLEN and a bounded GETRANGE: a value of 100 MB costs unlockValueBytes.
	pipe := c.Pipeline()
	exists := pipe.Exists(ctx, key)
	size := pipe.StrLen(ctx, key)
	part := pipe.GetRange(ctx, key, 0, unlockValueBytes-1)
	if _, err := pipe.Exec(ctx); err != nil {
		return res, err
	}
	n, v := size.Val(), part.Val()
	if exists.Val() == 0 { // expired between the reads
		res.Type, res.PTTLMS = "none", nil
		return res, nil
	}
	res.Value, res.ValueHex = &v, inspect.HexIfNotUTF8(v)
	if n > int64(len(v)) {
		res.ValueBytes, res.Truncated = n, true
	}
	if fence, owner, err := lockcore.ParseValue(v); err == nil {
		res.Fence, res.Owner = &fence, owner
	}
	return res, nil
}

// unlockValueBytes bounds the bytes of a string lock value unlock reads and
// prints (its owner check stays exact: ownedValue).
const unlockValueBytes = 1024

// readOther completes res for a key that is not a string (a Redisson hash,
// a stray list): its owner as inspect detects it (a bounded read of the key
// alone: no companion key, which an ACL scoped to the locks may refuse) and, with
// dump, its DUMP for forceDelete; only --force needs that (a DUMP of a big
// key is big, and an ACL may not allow it). The DUMP is read first: if the
// key is replaced between the two reads, the owner shown is the newer one
// and forceDelete, comparing the older DUMP, deletes nothing. Read-only.
func readOther(ctx context.Context, c redis.UniversalClient, res UnlockResult, dump bool) (UnlockResult, error) {
	if dump {
		d, err := c.Dump(ctx, res.Key).Result()
		if errors.Is(err, redis.Nil) { // expired between the reads
			res.Type, res.PTTLMS = "none", nil
			return res, nil
		}
		if err != nil {
			return res, err
		}
		res.dump = d
	}
	locks, err := (&inspect.Reader{NoCompanions: true}).Read(ctx, c, []string{res.Key})
	if err != nil {
		return res, err
	}
	if l := locks[0]; l.Type == res.Type {
		res.Owner = l.Owner
	}
	return res, nil
}

// forceDelete deletes exactly what was shown: the value, compared and
// deleted in one script, or, for a key that is not a lock string, its
// DUMP. It returns lockcore.ErrNotHeld when the key changed in between
// (another holder's lock, a re-entered Redisson hash) or is gone.
func forceDelete(ctx context.Context, conn *RedisConn, res UnlockResult) error {
	cctx, cancel := context.WithTimeout(ctx, conn.Timeout)
	defer cancel()
	lk := lockcore.NewLocker(conn.Client)
	if res.Value != nil {
		return lk.ReleaseValue(cctx, res.Key, *res.Value)
	}
	return lk.ReleaseDump(cctx, res.Key, res.dump)
}

// confirm asks on stderr and reads one line from stdin; only y or yes
// confirms. Ctrl-C at the prompt returns ctx's error (exit 130), not a
// declined answer.
func confirm(ctx context.Context, io *IOStreams, res UnlockResult) (bool, error) {
	fmt.Fprintf(io.ErrOut, "Delete %s (%s)? This lets another holder in while this one may still run. [y/N] ", oneLineText(res.Key), oneLineText(holderText(res)))
	answer := make(chan string, 1)
	go func() { // left blocked on the terminal if ctx ends first; lockctl exits
		line, _ := bufio.NewReader(io.In).ReadString('\n')
		answer <- strings.ToLower(strings.TrimSpace(line))
	}()
	select {
	case a := <-answer:
		return a == "y" || a == "yes", nil
	case <-ctx.Done():
		fmt.Fprintln(io.ErrOut)
		return false, ctx.Err()
	}
}

func holderText(res UnlockResult) string {
	var parts []string
	switch {
	case res.Fence != nil:
		parts = append(parts, "owner "+res.Owner, "fence "+strconv.FormatInt(*res.Fence, 10))
	case res.Value != nil:
		parts = append(parts, fmt.Sprintf("value %q", *res.Value))
	case res.Owner != "":
		parts = append(parts, "a Redis "+res.Type, "owner "+res.Owner)
	default:
		parts = append(parts, "a Redis "+res.Type)
	}
	if res.PTTLMS != nil {
		parts = append(parts, "PTTL "+pttlText(time.Duration(*res.PTTLMS)*time.Millisecond))
	}
	return strings.Join(parts, ", ")
}

func unlockSentence(res UnlockResult, st *Styles) string {
	switch res.Verdict {
	case UnlockOwned:
		return fmt.Sprintf("%s %s: the owner still held it (%s)", st.OK.Render("deleted"), oneLineText(res.Key), oneLineText(holderText(res)))
	case UnlockForced:
		return fmt.Sprintf("%s %s (forced): removed %s", st.Warn.Render("deleted"), oneLineText(res.Key), oneLineText(holderText(res)))
	case UnlockAbsent:
		return fmt.Sprintf("nothing deleted: %s does not exist", oneLineText(res.Key))
	case UnlockChanged:
		return fmt.Sprintf("%s: %s changed between the read and the delete", st.Error.Render("nothing deleted"), oneLineText(res.Key))
	case UnlockDeclined:
		return fmt.Sprintf("nothing deleted: %s kept (not confirmed)", oneLineText(res.Key))
	}
	return fmt.Sprintf("%s: %s is not held by that owner (%s)", st.Error.Render("nothing deleted"), oneLineText(res.Key), oneLineText(holderText(res)))
}

// unlockRows is the pure row builder of the unlock table.
func unlockRows(res UnlockResult) ([]Column, [][]string) {
	owner, fence, pttl := "-", "-", "-"
	switch {
	case res.Fence != nil:
		owner, fence = res.Owner, strconv.FormatInt(*res.Fence, 10)
	case res.Value != nil:
		owner = strconv.Quote(*res.Value)
	case res.Owner != "":
		owner = res.Owner
	}
	if res.PTTLMS != nil {
		pttl = pttlText(time.Duration(*res.PTTLMS) * time.Millisecond)
	}
	// The sentence above the table gives the owner whole when its column goes.
	return []Column{{Name: "key", Shorten: true}, {Name: "type", Rank: 6}, {Name: "owner", Rank: 3},
			{Name: "fence", Rank: 5}, {Name: "pttl", Rank: 4}, {Name: "verdict", Rank: 1}, {Name: "deleted", Rank: 2}},
		[][]string{{oneLineText(res.Key), res.Type, oneLineText(owner), fence, pttl, res.Verdict, strconv.FormatBool(res.Deleted)}}
}
