package conformance

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLibraries runs every case: acquire, renew (or the library's own
// watchdog), release and crash, with `lockctl inspect` after each step and
// `lockctl watch` across them (issue 20, item 1).
func TestLibraries(t *testing.T) {
	for _, c := range cases {
		t.Run(c.ID, func(t *testing.T) {
			t.Parallel()
			interpreter(t, c.Driver)
			srv := startServer(t)
			name := strings.ReplaceAll(c.Name, "%s", fmt.Sprintf("%06d", rand.IntN(1e6)))
			p := &problems{}
			runCase(t, c, srv.addr, name, p)
			judge(t, c.ID, p)
		})
	}
}

// knownSummary is one line on the known failures that ran: which still
// fail, and which now pass and can be removed from knownFailures.
func knownSummary() string {
	knownSeen.Lock()
	defer knownSeen.Unlock()
	var failing, passing []string
	for id, f := range knownSeen.failing {
		if f {
			failing = append(failing, id)
		} else {
			passing = append(passing, id)
		}
	}
	if len(failing)+len(passing) == 0 {
		return ""
	}
	slices.Sort(failing)
	slices.Sort(passing)
	return fmt.Sprintf("conformance: %d known failures still fail (%s); %d now pass (%s): remove an entry once its fix has landed (conformance/known_test.go)",
		len(failing), orNone(failing), len(passing), orNone(passing))
}

// problems collects what a case got wrong, so a known failure can be logged
// whole instead of stopping at the first.
type problems struct{ list []string }

func (p *problems) add(format string, args ...any) {
	if msg := fmt.Sprintf(format, args...); !slices.Contains(p.list, msg) {
		p.list = append(p.list, msg)
	}
}

// knownSeen records, per known failure that ran, whether it still fails;
// TestMain prints it, so CI's log says which entries can go without -v.
var knownSeen = struct {
	sync.Mutex
	failing map[string]bool
}{failing: map[string]bool{}}

// judge fails the test with every problem, unless the case is a known failure.
func judge(t *testing.T, id string, p *problems) {
	item, known := knownFailures[id]
	if known {
		knownSeen.Lock()
		knownSeen.failing[id] = len(p.list) > 0
		knownSeen.Unlock()
	}
	switch {
	case len(p.list) == 0 && known:
		t.Logf("%s now passes: remove it from knownFailures (was: %s)", id, item)
	case len(p.list) == 0:
	case known:
		t.Logf("KNOWN FAILURE %s (%s):\n  %s", id, item, strings.Join(p.list, "\n  "))
	default:
		t.Errorf("%s is wrong:\n  %s", id, strings.Join(p.list, "\n  "))
	}
}

func runCase(t *testing.T, c libCase, addr, name string, p *problems) {
	if c.Short {
		runShort(t, c, addr, name, p)
		return
	}
	h := startHolder(t, c, c.Mode, addr, name)
	w := startWatch(t, addr, "--key", h.Keys[0])
	// The case's server holds only what the library wrote: the lock and its companions.
	pw := startWatch(t, addr, "--pattern", "*")
	first := h.OwnerHex
	checkHeld(t, c, addr, h, "acquire", p)
	switch {
	case c.Renew:
		time.Sleep(300 * time.Millisecond) // a later expiry than the acquire's
		h.do("renew")
		waitEvent(w, "RENEWED", "renew", p)
		checkHeld(t, c, addr, h, "renew", p)
	case c.Watchdog:
		for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(150 * time.Millisecond) {
			checkHeld(t, c, addr, h, "watchdog", p)
		}
		waitEvent(w, "RENEWED", "watchdog", p)
	}
	h.do("release")
	checkFree(t, addr, h.Keys, "release", p)
	waitEvent(w, "RELEASED", "release", p)
	waitEvent(pw, "RELEASED", "release", p)
	crashMode := c.Mode
	if c.CrashMode != "" {
		crashMode = c.CrashMode
	}
	h2 := startHolder(t, c, crashMode, addr, name)
	h2.kill()
	checkHeld(t, c, addr, h2, "crash", p)
	waitEvent(pw, "ACQUIRED", "crash", p)
	checkEvents(w.stop(t), c, first, h2.OwnerHex, p)
	checkPatternEvents(pw.stop(t), c, slices.Concat(h.Keys, h2.Keys), first, h2.OwnerHex, p)
}

// waitEvent records a problem when watch shows no kind event within 10 s of step.
func waitEvent(w *watcher, kind, step string, p *problems) {
	if !w.waitFor(kind) {
		p.add("watch: no %s event within 10 s of the %s step", kind, step)
	}
}

// checkPatternEvents asserts `watch --pattern '*'` saw on the lock key the
// ownership changes `watch --key` saw (checkEvents; a renewal only where it
// moves the TTL by more than a pass's 500 ms tolerance, so it is not
// required), and made no ownership event for any other key: a companion (a
// fence counter, a queue's keys) holds nothing.
func checkPatternEvents(evs []event, c libCase, lockKeys []string, first, second string, p *problems) {
	ownership := []string{"HELD", "ACQUIRED", "RENEWED", "RELEASED", "TAKEOVER", "EXPIRED"}
	var onLock, stray []event
	for _, e := range evs {
		switch {
		case !slices.Contains(ownership, e.Event): // FINDING, FINDING_CLEARED, TTL_JUMP, COMPANION: no holder change
		case e.Key == lockKeys[0]:
			onLock = append(onLock, e)
		case !slices.Contains(lockKeys, e.Key):
			stray = append(stray, e)
		}
	}
	for _, e := range stray {
		p.add("watch --pattern: ownership event %s on %s, not a lock the library holds", e.Event, e.Key)
	}
	noRenew := c
	noRenew.Renew, noRenew.Watchdog = false, false
	var sub problems
	checkEvents(onLock, noRenew, first, second, &sub)
	for _, msg := range sub.list {
		p.add("%s", strings.Replace(msg, "watch:", "watch --pattern:", 1))
	}
}

// runShort checks a sub-second lease right after acquiring; the key may be
// gone by then on a loaded machine, so up to 5 tries.
func runShort(t *testing.T, c libCase, addr, name string, p *problems) {
	for try := 0; try < 5; try++ {
		h := startHolder(t, c, c.Mode, addr, fmt.Sprintf("%s-%d", name, try))
		if locks := inspect(t, addr, h.Keys[0]); locks[0].Exists {
			checkLock(c, locks[0], h, "acquire", p)
			return
		}
	}
	t.Fatalf("the %s lock expired before inspect read it, 5 times", c.ID)
}

// checkHeld inspects the holder's keys and checks each.
func checkHeld(t *testing.T, c libCase, addr string, h *holder, step string, p *problems) {
	for _, l := range inspect(t, addr, h.Keys...) {
		checkLock(c, l, h, step, p)
	}
}

// checkLock asserts layout, owner, holder, fence and findings of one held lock.
func checkLock(c libCase, l lockJSON, h *holder, step string, p *problems) {
	at := step + " " + l.Key
	if !l.Exists {
		p.add("%s: key absent while held", at)
		return
	}
	if !layoutRight(l, c.Layouts) {
		p.add("%s: layout %s (%s, candidates %s), want %s", at, l.Layout.Name, l.Layout.Confidence,
			orNone(l.candidates()), strings.Join(c.Layouts, " or "))
	}
	if c.Zset {
		if !strings.Contains(string(l.Raw), hexText(h.OwnerHex)) {
			p.add("%s: holder %s not among the holders shown", at, hexText(h.OwnerHex))
		}
	} else if l.OwnerHex != h.OwnerHex {
		p.add("%s: owner %q, the library wrote %q", at, hexText(l.OwnerHex), hexText(h.OwnerHex))
	}
	if l.Fence != nil && (l.Fence.Value != nil || l.Fence.Counter != nil) {
		p.add("%s: a fence was reported; the library issues none", at)
	}
	checkHolder(c, l, at, p)
	checkFindings(c, l, at, p)
}

func checkHolder(c libCase, l lockJSON, at string, p *problems) {
	var acquired, metadata string
	if l.Holder != nil {
		acquired, metadata = l.Holder.AcquiredAt, l.Holder.Metadata
	}
	if c.Metadata != metadata {
		p.add("%s: holder metadata %q, want %q", at, metadata, c.Metadata)
	}
	if acquired == "" {
		if c.AcquiredAt {
			p.add("%s: no holder acquired_at; the value carries it", at)
		}
		return
	}
	ts, err := time.Parse(time.RFC3339, acquired)
	if err != nil || time.Since(ts).Abs() > 24*time.Hour {
		p.add("%s: holder acquired_at %s is not within now ± 1 day (invented)", at, acquired)
	}
}

// checkFindings: every Need code present, no warning or error outside Need and Allow.
func checkFindings(c libCase, l lockJSON, at string, p *problems) {
	var got []string
	for _, f := range l.Findings {
		got = append(got, f.Code)
		if f.Severity == "info" || slices.Contains(c.Need, f.Code) || slices.Contains(c.Allow, f.Code) {
			continue
		}
		p.add("%s: false finding %s (%s): %s", at, f.Code, f.Severity, f.Message)
	}
	for _, code := range c.Need {
		if !slices.Contains(got, code) {
			p.add("%s: missing finding %s (true of this lock)", at, code)
		}
	}
}

// checkFree asserts the keys are gone and nothing but info is reported.
func checkFree(t *testing.T, addr string, keys []string, step string, p *problems) {
	for _, l := range inspect(t, addr, keys...) {
		if l.Exists {
			p.add("%s %s: key still there after release", step, l.Key)
		}
		for _, f := range l.Findings {
			if f.Severity != "info" {
				p.add("%s %s: finding %s on a released lock", step, l.Key, f.Code)
			}
		}
	}
}

// checkEvents asserts watch saw the first owner hold (watch starts after the
// acquire: the keys come from the driver), keep and release the lock, then
// the second owner acquire it, and nothing else.
func checkEvents(evs []event, c libCase, first, second string, p *problems) {
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Event)
	}
	seen := strings.Join(kinds, " ")
	want := []string{"HELD"}
	if c.Renew || c.Watchdog {
		want = append(want, "RENEWED")
	}
	want = append(want, "RELEASED", "ACQUIRED")
	if !isSubsequence(want, kinds) {
		p.add("watch: events %q, want %q in that order", seen, strings.Join(want, " "))
	}
	for _, k := range kinds {
		if !slices.Contains([]string{"HELD", "ACQUIRED", "RENEWED", "RELEASED"}, k) {
			p.add("watch: unexpected event %s in %q", k, seen)
		}
	}
	owners := map[string]bool{}
	for _, e := range evs {
		if e.Event == "HELD" || e.Event == "ACQUIRED" {
			owners[e.Owner] = true
		}
	}
	if !c.Zset && (!ownerSeen(owners, first) || !ownerSeen(owners, second)) {
		p.add("watch: HELD/ACQUIRED owners %v, want %s and %s", owners, hexText(first), hexText(second))
	}
}

// ownerSeen: watch prints a printable owner as text, else as hex.
func ownerSeen(owners map[string]bool, ownerHex string) bool {
	return owners[hexText(ownerHex)] || owners["hex:"+ownerHex]
}

func isSubsequence(want, got []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// layoutRight: a right name, an honest guess whose candidates include one,
// or a generic shape (layout unknown) that names no library and lists one
// among the libraries known to write it (issue 27: a bare UUID, 32 random
// hex and 16 alphanumerics name none).
func layoutRight(l lockJSON, want []string) bool {
	if slices.Contains(want, l.Layout.Name) {
		return true
	}
	if l.Layout.Confidence != "guess" {
		return false
	}
	right := func(n string) bool { return slices.Contains(want, n) }
	if l.Layout.Name == "unknown" {
		return l.Layout.Shape != "" && slices.ContainsFunc(l.Layout.SeenIn, right)
	}
	return slices.ContainsFunc(l.candidates(), right)
}

func hexText(h string) string {
	b, _ := hex.DecodeString(h)
	return string(b)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}
