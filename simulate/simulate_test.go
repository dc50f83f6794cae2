package simulate

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/history"
)

func run(t *testing.T, sc Scenario) Result {
	t.Helper()
	r, err := Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func runBuiltin(t *testing.T, name string, g Guards, o Overrides) Result {
	t.Helper()
	sc, err := Builtin(name, g, o)
	if err != nil {
		t.Fatal(err)
	}
	return run(t, sc)
}

// find returns the first event matching actor and kind at or after at_ms.
func find(t *testing.T, r Result, atMS int64, actor, kind string) Event {
	t.Helper()
	for _, e := range r.Events {
		if e.AtMS == atMS && e.Actor == actor && e.Kind == kind {
			return e
		}
	}
	t.Fatalf("no %s %s event at %dms in %s", actor, kind, atMS, dump(r))
	return Event{}
}

func violation(r Result, code string) (Violation, bool) {
	i := slices.IndexFunc(r.Violations, func(v Violation) bool { return v.Code == code })
	if i < 0 {
		return Violation{}, false
	}
	return r.Violations[i], true
}

func dump(r Result) string {
	b, _ := json.MarshalIndent(r, "", " ")
	return string(b)
}

// The honest verdicts of the issue: six scenarios are safe with every guard
// on and unsafe with their guard off; failover and clock-jump stay unsafe.
func TestBuiltinVerdicts(t *testing.T) {
	for _, b := range Builtins() {
		t.Run(b.Name, func(t *testing.T) {
			r := runBuiltin(t, b.Name, AllGuards(), Overrides{})
			want := history.VerdictSafe
			if !b.SafeGuarded {
				want = history.VerdictUnsafe
			}
			if r.Verdict != want {
				t.Fatalf("all guards: verdict %s, want %s: %v", r.Verdict, want, r.Violations)
			}
			if b.Guard == "" {
				if !r.Store.Correct && r.FenceSource == FenceStore {
					t.Errorf("store incorrect with a durable fence source")
				}
				return
			}
			gi := slices.IndexFunc(r.Guards, func(g GuardReport) bool { return g.Guard == b.Guard })
			if r.Guards[gi].Effect != EffectSaved {
				t.Errorf("guard %s: effect %s, want saved", b.Guard, r.Guards[gi].Effect)
			}
			off := runBuiltin(t, b.Name, AllGuards().With(b.Guard, false), Overrides{})
			if off.Verdict != history.VerdictUnsafe {
				t.Fatalf("%s off: verdict %s, want unsafe", b.Guard, off.Verdict)
			}
			gi = slices.IndexFunc(off.Guards, func(g GuardReport) bool { return g.Guard == b.Guard })
			if off.Guards[gi].Effect != EffectWouldSave {
				t.Errorf("%s off: effect %s, want would_have_saved", b.Guard, off.Guards[gi].Effect)
			}
		})
	}
}

// Failover and clock jump stay unsafe, but fencing with a durable fence
// source keeps the store's writes correct.
func TestLimitsFencingKeepsStoreCorrect(t *testing.T) {
	r := runBuiltin(t, "failover", AllGuards(), Overrides{})
	if _, ok := violation(r, history.CodeFenceBackwards); !ok || r.Store.Correct {
		t.Errorf("failover, fence in redis: want FENCE_BACKWARDS and an incorrect store: %v", r.Violations)
	}
	r = runBuiltin(t, "failover", AllGuards(), Overrides{FenceSource: FenceStore})
	if r.Verdict != history.VerdictUnsafe || !r.Store.Correct || r.Store.Rejected != 1 {
		t.Errorf("failover, durable fence: verdict %s store %+v", r.Verdict, r.Store)
	}
	if _, ok := violation(r, history.CodeOverlap); !ok {
		t.Errorf("failover: want OVERLAP: %v", r.Violations)
	}
	r = runBuiltin(t, "clock-jump", AllGuards(), Overrides{})
	if r.Verdict != history.VerdictUnsafe || !r.Store.Correct || r.Store.Rejected != 1 {
		t.Errorf("clock-jump: verdict %s store %+v", r.Verdict, r.Store)
	}
}

// cases.md 2: release by plain DEL.
func TestCase2UnsafeRelease(t *testing.T) {
	r := runBuiltin(t, "unsafe-release", AllGuards(), Overrides{})
	find(t, r, 30000, "redis", "expire")
	if e := find(t, r, 30500, "B", "acquire"); !e.OK {
		t.Errorf("B's acquire at 30500 failed: %+v", e)
	}
	if e := find(t, r, 31000, "A", "release"); e.OK || !strings.Contains(e.Note, "not owner") {
		t.Errorf("owner-checked release at 31000: %+v", e)
	}
	if e := find(t, r, 31100, "C", "acquire"); e.OK {
		t.Errorf("C entered at 31100 with owner checks: %+v", e)
	}
	if r.Verdict != history.VerdictSafe {
		t.Errorf("verdict %s: %v", r.Verdict, r.Violations)
	}

	r = runBuiltin(t, "unsafe-release", AllGuards().With("owner_check", false), Overrides{})
	v, ok := violation(r, history.CodeForeignRelease)
	if !ok || v.AtMS != 31000 || v.Actor != "A" {
		t.Errorf("FOREIGN_RELEASE: %+v", r.Violations)
	}
	v, ok = violation(r, history.CodeOverlap)
	if !ok || v.AtMS != 31100 || v.Message != "B and C both in the critical section 31.1s–1m" {
		t.Errorf("OVERLAP 31100–60000: %+v", v)
	}
}

// cases.md 3: renewal by plain PEXPIRE.
func TestCase3RenewalLoss(t *testing.T) {
	r := runBuiltin(t, "renewal-loss", AllGuards().With("cancel_on_loss", false), Overrides{})
	find(t, r, 10000, "redis", "expire")
	find(t, r, 10500, "B", "acquire")
	if e := find(t, r, 16000, "A", "renew"); e.OK || !strings.Contains(e.Note, "not owner") {
		t.Errorf("owner-checked renewal at 16000 must fail: %+v", e)
	}
	v, ok := violation(r, history.CodeLockLost)
	if !ok || v.AtMS != 10000 || v.Actor != "A" {
		t.Errorf("A lost the lock at 10000: %+v", r.Violations)
	}
	if _, ok := violation(r, history.CodeForeignRenew); ok {
		t.Errorf("no FOREIGN_RENEW with owner checks: %+v", r.Violations)
	}

	r = runBuiltin(t, "renewal-loss", AllGuards().With("cancel_on_loss", false).With("owner_check", false), Overrides{})
	if e := find(t, r, 16000, "A", "renew"); !e.OK || e.Lock.Holder != "B" {
		t.Errorf("blind renewal at 16000 extends B's key: %+v", e)
	}
	v, ok = violation(r, history.CodeForeignRenew)
	if !ok || v.AtMS != 16000 || v.Actor != "A" {
		t.Errorf("FOREIGN_RENEW at 16000: %+v", r.Violations)
	}

	// With cancel-on-loss A stops before its lease ends (10000 − 102 ms margin).
	r = runBuiltin(t, "renewal-loss", AllGuards(), Overrides{})
	find(t, r, 9898, "A", "cancel")
	if r.Verdict != history.VerdictSafe {
		t.Errorf("verdict %s: %v", r.Verdict, r.Violations)
	}
}

func readCase7(t *testing.T) Scenario {
	t.Helper()
	data, err := os.ReadFile("testdata/case7-gc-pause.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ParseFile(data)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// cases.md 7: GC pause, double payout, replayed from a scenario file.
func TestCase7GCPause(t *testing.T) {
	sc := readCase7(t)
	r := run(t, sc)
	if e := find(t, r, 0, "A", "acquire"); e.Fence != 17 {
		t.Errorf("A's fence %d, want 17", e.Fence)
	}
	find(t, r, 30000, "redis", "expire")
	if e := find(t, r, 31000, "B", "acquire"); e.Fence != 18 {
		t.Errorf("B's fence %d, want 18", e.Fence)
	}
	if e := find(t, r, 33000, "B", "write"); !e.OK {
		t.Errorf("B's commit: %+v", e)
	}
	if e := find(t, r, 38000, "A", "write"); e.OK || e.Note != "rejected: fence 17 < 18" {
		t.Errorf("A's commit with fence 17 must be rejected: %+v", e)
	}
	if r.Verdict != history.VerdictSafe {
		t.Errorf("verdict %s: %v", r.Verdict, r.Violations)
	}

	sc.Guards.Fencing = false
	for _, check := range []string{CheckNone, CheckTTL} {
		sc.Check = check
		r = run(t, sc)
		v, ok := violation(r, history.CodeStaleWrite)
		if !ok || v.AtMS != 38000 || v.Actor != "A" {
			t.Errorf("check %s: want STALE_WRITE_ACCEPTED at 38000: %v", check, r.Violations)
		}
	}
	// The TTL check passed at 1s, on A's stale view.
	if e := find(t, r, 38000, "A", "write"); !strings.Contains(e.Note, "TTL check passed at 1s") {
		t.Errorf("TTL note: %q", e.Note)
	}
}

// A TTL check before the write does not help stale-writer without fencing.
func TestStaleWriterTTLCheckDoesNotHelp(t *testing.T) {
	r := runBuiltin(t, "stale-writer", AllGuards().With("fencing", false), Overrides{Check: CheckTTL})
	if r.Verdict != history.VerdictUnsafe {
		t.Fatalf("verdict %s", r.Verdict)
	}
	if len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "TTL check passed before the pause") {
		t.Errorf("notes: %q", r.Notes)
	}
	// A pause that ends before the write is not in flight: the check works.
	r = runBuiltin(t, "stale-writer", AllGuards().With("fencing", false), Overrides{Pause: 10 * 1e9})
	if r.Verdict != history.VerdictSafe {
		t.Errorf("10s pause: verdict %s: %v", r.Verdict, r.Violations)
	}
}

func TestCrashRecoveryTakeover(t *testing.T) {
	r := runBuiltin(t, "crash-recovery", AllGuards(), Overrides{})
	if e := find(t, r, 80000, "B", "acquire"); e.Fence != 34 {
		t.Errorf("B takes over at 80s (A's last renewal at 20s + 60s): %+v", e)
	}
	r = runBuiltin(t, "crash-recovery", AllGuards(), Overrides{Mode: "ordinary"})
	find(t, r, 1200000, "B", "acquire")
	r = runBuiltin(t, "crash-recovery", AllGuards().With("idempotency_key", false), Overrides{Checkpoints: true})
	if r.Verdict != history.VerdictSafe || r.Store.Effects != 3 {
		t.Errorf("checkpoints: verdict %s effects %d", r.Verdict, r.Store.Effects)
	}
}

func TestDeterministic(t *testing.T) {
	for _, name := range BuiltinNames() {
		a, _ := json.Marshal(runBuiltin(t, name, AllGuards(), Overrides{}))
		b, _ := json.Marshal(runBuiltin(t, name, AllGuards(), Overrides{}))
		if string(a) != string(b) {
			t.Errorf("%s: two runs differ", name)
		}
	}
}

func TestBuiltinErrors(t *testing.T) {
	if _, err := Builtin("nope", AllGuards(), Overrides{}); err == nil || !strings.Contains(err.Error(), `scenario "nope" is not one of stale-writer`) {
		t.Errorf("unknown scenario: %v", err)
	}
	if _, err := Builtin("duplicate-delivery", AllGuards(), Overrides{Pause: 1e9}); err == nil || !strings.Contains(err.Error(), "has no pause") {
		t.Errorf("--pause without a pause: %v", err)
	}
}
