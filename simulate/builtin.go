package simulate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockctl/lockctl/lockcore"
)

// Overrides change a built-in scenario (the --budget, --mode, --lease,
// --pause, --renew-every, --fence-source, --check and --checkpoints flags).
// Zero values keep the scenario's own.
type Overrides struct {
	Budget     time.Duration
	Mode       lockcore.Mode
	Lease      time.Duration
	RenewEvery time.Duration
	// Policy is the configured lease policy (zero: lockcore's defaults). A
	// lease derived from a budget takes its lease cap, renewal bound and
	// renewal interval where the scenario does not set them (withPolicy);
	// an explicit lease keeps the scenario's numbers.
	Policy      lockcore.Policy
	Pause       time.Duration
	FenceSource string
	Check       string
	Checkpoints bool
	FenceStart  int64
}

// BuiltinInfo describes a built-in scenario for --list.
type BuiltinInfo struct {
	Name string `json:"name"`
	// Guard is the guard that makes it safe ("" when none can).
	Guard       string `json:"guard"`
	SafeGuarded bool   `json:"safe_with_all_guards"`
	Description string `json:"description"`
}

type builtin struct {
	info  BuiltinInfo
	build func(p leaseParams) []Step
}

const kleppmannFence = 33

func sec(s float64) int64 { return int64(s * 1000) }

var builtins = []builtin{
	{BuiltinInfo{"stale-writer", "fencing", true,
		"A holds a 30s lease, prepares its commit and freezes in a GC pause; its key expires, B acquires (fence 34) and writes; A wakes and its commit (fence 33) reaches the store. Only the write boundary can refuse it: a TTL check (--check ttl) or cancellation before the write passes on A's stale view (Kleppmann 2016). --pause sets the pause."},
		func(p leaseParams) []Step {
			return []Step{
				{AtMS: 0, Actor: "A", Do: ActAcquire},
				{AtMS: sec(1), Actor: "A", Do: ActPause, ForMS: sec(37), Note: "stop-the-world GC"},
				{AtMS: sec(1), Actor: "A", Do: ActWrite, Note: "the commit A prepared before the pause"},
				{AtMS: sec(1), Actor: "A", Do: ActRelease},
				{AtMS: sec(31), Actor: "B", Do: ActAcquire},
				{AtMS: sec(33), Actor: "B", Do: ActWrite},
				{AtMS: sec(34), Actor: "B", Do: ActRelease},
			}
		}},
	{BuiltinInfo{"unsafe-release", "owner_check", true,
		"A works 25s under a 30s lease and pauses just before its cleanup; the key expires, B acquires at 30.5s; A wakes and releases at 31s. A blind DEL frees B's lock and C enters at 31.1s while B runs to 60s; an owner-checked release is refused (cases.md 2)."},
		func(p leaseParams) []Step {
			return []Step{
				{AtMS: 0, Actor: "A", Do: ActAcquire},
				{AtMS: 0, Actor: "A", Do: ActWork, ForMS: sec(25)},
				{AtMS: sec(25), Actor: "A", Do: ActPause, ForMS: sec(6), Note: "GC pause just before the cleanup"},
				{AtMS: sec(25), Actor: "A", Do: ActRelease},
				{AtMS: sec(30.5), Actor: "B", Do: ActAcquire},
				{AtMS: sec(30.5), Actor: "B", Do: ActWork, ForMS: sec(29.5)},
				{AtMS: sec(60), Actor: "B", Do: ActRelease},
				{AtMS: sec(31.1), Actor: "C", Do: ActAcquire},
				{AtMS: sec(31.1), Actor: "C", Do: ActWork, ForMS: sec(30)},
				{AtMS: sec(61.1), Actor: "C", Do: ActRelease},
			}
		}},
	{BuiltinInfo{"renewal-loss", "cancel_on_loss", true,
		"A renews a 10s lease every 5s and is cut off from Redis 4s–16s while its work goes on; the key expires at 10s and B acquires at 10.5s. With cancel-on-loss A stops before its lease ends; without, it works on beside B, and its renewal at 16s is refused (owner-checked) or, blind, extends B's key (cases.md 3)."},
		func(p leaseParams) []Step {
			return []Step{
				{AtMS: 0, Actor: "A", Do: ActAcquire},
				{AtMS: 0, Actor: "A", Do: ActWork, ForMS: sec(30)},
				{AtMS: sec(30), Actor: "A", Do: ActRelease},
				{AtMS: sec(4), Actor: "A", Do: ActPartition, ForMS: sec(12)},
				{AtMS: sec(10.5), Actor: "B", Do: ActAcquire},
				{AtMS: sec(10.5), Actor: "B", Do: ActWork, ForMS: sec(10)},
				{AtMS: sec(20.5), Actor: "B", Do: ActRelease},
			}
		}},
	{BuiltinInfo{"crash-recovery", "idempotency_key", true,
		"A (budget 1200s) sends unit-1 and unit-2, then crashes; B waits for the key to expire: one lease, 60s renewable (trusted) vs 1200s fixed (--mode ordinary). Without checkpoints B starts over and sends them again; the receiver dedupes with idempotency keys; --checkpoints makes B resume."},
		func(p leaseParams) []Step {
			return []Step{
				{AtMS: 0, Actor: "A", Do: ActAcquire},
				{AtMS: sec(10), Actor: "A", Do: ActSend, Key: "unit-1"},
				{AtMS: sec(20), Actor: "A", Do: ActSend, Key: "unit-2"},
				{AtMS: sec(25), Actor: "A", Do: ActCrash},
				{AtMS: sec(30), Actor: "B", Do: ActAcquire, WaitMS: p.lease + sec(60)},
				{AtMS: sec(31), Actor: "B", Do: ActSend, Key: "unit-1"},
				{AtMS: sec(32), Actor: "B", Do: ActSend, Key: "unit-2"},
				{AtMS: sec(33), Actor: "B", Do: ActSend, Key: "unit-3"},
				{AtMS: sec(34), Actor: "B", Do: ActRelease},
			}
		}},
	{BuiltinInfo{"duplicate-delivery", "idempotency_key", true,
		"A sends payout-7; the receiver applies it but the reply is lost; A's retry sends it again. Without an idempotency key the payout happens twice."},
		func(p leaseParams) []Step {
			return []Step{
				{AtMS: 0, Actor: "A", Do: ActAcquire},
				{AtMS: sec(2), Actor: "A", Do: ActSend, Key: "payout-7", Note: "applied; the reply was lost"},
				{AtMS: sec(5), Actor: "A", Do: ActSend, Key: "payout-7", Note: "retry after the timeout"},
				{AtMS: sec(6), Actor: "A", Do: ActRelease},
			}
		}},
	{BuiltinInfo{"failover", "", false,
		"The primary acknowledges A's lock and dies before replicating it; the promoted replica hands the lock to B: two holders. No guard prevents the overlap (leases assume durable lock state); the fence counter goes backwards unless it comes from a durable source (--fence-source store), and then fencing keeps the store's writes correct. The replica has the counter, one lag behind, so INCR reissues tokens: starting a missing counter at the server's TIME covers an empty restart, not this, nor a replica without the counter whose clock is behind the old primary's (docs/fencing.md)."},
		func(p leaseParams) []Step {
			return []Step{
				{AtMS: 0, Actor: "A", Do: ActAcquire},
				{AtMS: 0, Actor: "A", Do: ActWork, ForMS: sec(8)},
				{AtMS: sec(8), Actor: "A", Do: ActWrite},
				{AtMS: sec(9), Actor: "A", Do: ActRelease},
				{AtMS: sec(0.5), Do: ActFailover},
				{AtMS: sec(1), Actor: "B", Do: ActAcquire},
				{AtMS: sec(1), Actor: "B", Do: ActWork, ForMS: sec(4)},
				{AtMS: sec(5), Actor: "B", Do: ActWrite},
				{AtMS: sec(6), Actor: "B", Do: ActRelease},
			}
		}},
	{BuiltinInfo{"clock-jump", "", false,
		"The server's clock steps forward 30s at 5s: A's lease ends early while A works, and B acquires. No guard prevents the overlap (leases assume bounded clock error); fencing still refuses A's older write. A step forward only raises the TIME a lost fence counter restarts from; a clock that goes back could restart one below tokens already issued (docs/fencing.md)."},
		func(p leaseParams) []Step {
			return []Step{
				{AtMS: 0, Actor: "A", Do: ActAcquire},
				{AtMS: 0, Actor: "A", Do: ActWork, ForMS: sec(12)},
				{AtMS: sec(12), Actor: "A", Do: ActWrite},
				{AtMS: sec(13), Actor: "A", Do: ActRelease},
				{AtMS: sec(5), Do: ActClockJump, ByMS: sec(30)},
				{AtMS: sec(6), Actor: "B", Do: ActAcquire},
				{AtMS: sec(6), Actor: "B", Do: ActWork, ForMS: sec(2)},
				{AtMS: sec(8), Actor: "B", Do: ActWrite},
				{AtMS: sec(9), Actor: "B", Do: ActRelease},
			}
		}},
	{BuiltinInfo{"long-budget", "cancel_on_loss", true,
		"A trusted task with a 13h budget on 60s leases renewed every 20s is stuck in a blocking call: the renewer keeps the lease while nothing progresses. The budget, not the lock, must stop it: with cancel-on-loss the work is cancelled at 13h; without, renewals stop at the 13h bound, the key expires and B enters while A's call goes on."},
		func(p leaseParams) []Step {
			return []Step{
				{AtMS: 0, Actor: "A", Do: ActAcquire},
				{AtMS: 0, Actor: "A", Do: ActCall, ForMS: 14 * 3600 * 1000, Note: "a stuck external call"},
				{AtMS: 14 * 3600 * 1000, Actor: "A", Do: ActRelease},
				{AtMS: 3600 * 1000, Actor: "B", Do: ActAcquire, WaitMS: 14 * 3600 * 1000},
				{AtMS: 3600 * 1000, Actor: "B", Do: ActWork, ForMS: 10 * 60 * 1000},
				{AtMS: 3600*1000 + 10*60*1000, Actor: "B", Do: ActRelease},
			}
		}},
}

// builtinPolicy is each built-in's own lease.
var builtinPolicy = map[string]PolicySpec{
	"stale-writer":       {Lease: 30 * time.Second},
	"unsafe-release":     {Lease: 30 * time.Second},
	"renewal-loss":       {Lease: 10 * time.Second, RenewEvery: 5 * time.Second},
	"crash-recovery":     {Budget: 1200 * time.Second, Mode: lockcore.ModeTrusted},
	"duplicate-delivery": {Lease: 30 * time.Second},
	"failover":           {Lease: 30 * time.Second},
	"clock-jump":         {Lease: 30 * time.Second},
	"long-budget":        {Budget: 13 * time.Hour, Mode: lockcore.ModeTrusted},
	"redlock-clock-jump": {Lease: 30 * time.Second},
	"redlock-pause":      {Lease: 30 * time.Second},
	"redlock-late-pause": {Lease: 30 * time.Second},
	"redlock-restart":    {Lease: 30 * time.Second},
	"redlock-slow-boot":  {Lease: 30 * time.Second},
}

// builtinNodes are the Redlock nodes of the built-ins that have more than one.
var builtinNodes = map[string]int{
	"redlock-clock-jump": 5, "redlock-pause": 5, "redlock-late-pause": 5, "redlock-restart": 5, "redlock-slow-boot": 5,
}

// Builtins describes the built-in scenarios in a fixed order.
func Builtins() []BuiltinInfo {
	out := make([]BuiltinInfo, len(builtins))
	for i, b := range builtins {
		out[i] = b.info
	}
	return out
}

// BuiltinNames lists the built-in scenarios' names.
func BuiltinNames() []string {
	out := make([]string, len(builtins))
	for i, b := range builtins {
		out[i] = b.info.Name
	}
	return out
}

// Builtin returns the built-in scenario called name with guards g and the
// overrides applied. It returns an error naming the value when the name is
// unknown, an override makes no valid lease, or --fence-source redis meets
// a Redlock built-in (checkNodes). g is taken as given: lockctl passes
// fencing off for a Redlock built-in unless --fencing is given, since
// Redlock issues no fencing token.
func Builtin(name string, g Guards, o Overrides) (Scenario, error) {
	i := slices.IndexFunc(builtins, func(b builtin) bool { return b.info.Name == name })
	if i < 0 {
		return Scenario{}, fmt.Errorf("scenario %q is not one of %s", name, strings.Join(BuiltinNames(), ", "))
	}
	b := builtins[i]
	sc := Scenario{Name: name, Description: b.info.Description, Policy: builtinPolicy[name], Guards: g,
		FenceStart: kleppmannFence, FenceSource: FenceRedis, Check: CheckNone, Nodes: builtinNodes[name]}
	if sc.Nodes > 1 {
		sc.FenceSource = FenceStore // there is no single INCR over N nodes (checkNodes)
	}
	sc.Policy = o.policy(sc.Policy)
	p, err := sc.resolve()
	if err != nil {
		return Scenario{}, err
	}
	sc.Steps = b.build(p)
	if err := sc.Apply(o); err != nil {
		return Scenario{}, err
	}
	if err := sc.checkNodes(p); err != nil { // --fence-source redis on a Redlock built-in
		return Scenario{}, err
	}
	return sc, nil
}

// policy applies the lease overrides: --lease makes a fixed lease, --budget
// (or --mode) a policy lease, which takes the configured policy's lease cap,
// renewal bound and renewal interval; --renew-every adjusts either.
func (o Overrides) policy(ps PolicySpec) PolicySpec {
	switch {
	case o.Budget > 0:
		ps = PolicySpec{Budget: o.Budget, Mode: o.Mode}
	case o.Lease > 0:
		ps = PolicySpec{Lease: o.Lease}
	case o.Mode != "" && ps.Budget > 0:
		ps.Mode = o.Mode
	case o.Mode != "":
		ps = PolicySpec{Budget: ps.Lease, Mode: o.Mode}
	}
	if o.RenewEvery > 0 {
		ps.RenewEvery = o.RenewEvery
	}
	return ps.withPolicy(o.Policy)
}

// withPolicy fills a budget-derived lease's lease cap, renewal bound and
// renewal interval from pol where ps does not set them: a team's configured
// policy decides what a budget gets (as in lockctl lease). An explicit lease
// keeps its own numbers: they describe the incident.
func (ps PolicySpec) withPolicy(pol lockcore.Policy) PolicySpec {
	if ps.Budget <= 0 {
		return ps
	}
	if ps.LeaseCap == 0 {
		ps.LeaseCap = pol.LeaseCap
	}
	if ps.RenewBound == 0 {
		ps.RenewBound = pol.RenewBound
	}
	if ps.RenewEvery == 0 {
		ps.RenewEvery = pol.RenewEvery
	}
	return ps
}

// Apply sets the non-lease overrides on a scenario: --pause sets the length
// of its first pause; fence source, check, checkpoints and fence start; and
// a budget-derived lease takes o.Policy where the scenario sets no lease cap,
// renewal bound or renewal interval (withPolicy). It returns an error naming
// a bad value.
func (sc *Scenario) Apply(o Overrides) error {
	sc.Policy = sc.Policy.withPolicy(o.Policy)
	if o.Pause > 0 {
		i := slices.IndexFunc(sc.Steps, func(s Step) bool { return s.Do == ActPause })
		if i < 0 {
			return fmt.Errorf("--pause: scenario %q has no pause", sc.Name)
		}
		sc.Steps[i].ForMS = ms(o.Pause)
	}
	if o.FenceSource != "" {
		if o.FenceSource != FenceRedis && o.FenceSource != FenceStore {
			return fmt.Errorf("fence source %q is not one of redis, store", o.FenceSource)
		}
		sc.FenceSource = o.FenceSource
	}
	if o.Check != "" {
		if o.Check != CheckNone && o.Check != CheckTTL {
			return fmt.Errorf("check %q is not one of none, ttl", o.Check)
		}
		sc.Check = o.Check
	}
	if o.Checkpoints {
		sc.Checkpoints = true
	}
	if o.FenceStart > 0 {
		sc.FenceStart = o.FenceStart
	}
	return nil
}
