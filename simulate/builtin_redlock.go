package simulate

// The Redlock built-ins (5 nodes, 30 s leases): the counterexamples of the
// Kleppmann–antirez debate, each replayed rather than asserted
// (docs/redlock-debate.md). Node k is Kleppmann's k-th letter: node 3 is C.

func init() {
	builtins = append(builtins, redlockBuiltins...)
}

// splitBrain is A holding nodes 1–3 (4 and 5 unreachable), node 3 losing
// A's key through fault at 5s, and B taking nodes 3–5 at 6s (1 and 2
// unreachable from it); bWait is how long B's acquire retries.
func splitBrain(fault []Step, bWait int64) []Step {
	steps := []Step{
		{AtMS: 0, Actor: "A", Do: ActPartition, ForMS: sec(10), Nodes: []int{4, 5}, Note: "A cannot reach D and E"},
		{AtMS: 0, Actor: "A", Do: ActAcquire},
		{AtMS: 0, Actor: "A", Do: ActWork, ForMS: sec(20)},
		{AtMS: sec(20), Actor: "A", Do: ActWrite},
		{AtMS: sec(21), Actor: "A", Do: ActRelease},
	}
	steps = append(steps, fault...)
	return append(steps,
		Step{AtMS: sec(5), Actor: "B", Do: ActPartition, ForMS: sec(10), Nodes: []int{1, 2}, Note: "B cannot reach A and B"},
		Step{AtMS: sec(6), Actor: "B", Do: ActAcquire, WaitMS: bWait},
		Step{AtMS: sec(6), Actor: "B", Do: ActWork, ForMS: sec(4)},
		Step{AtMS: sec(10), Actor: "B", Do: ActWrite},
		Step{AtMS: sec(11), Actor: "B", Do: ActRelease},
	)
}

// pauseAt is A acquiring at 0 and freezing 40s at pause (ms) with its commit
// prepared; B takes the expired lock at 31s and writes.
func pauseAt(pause int64, note string) []Step {
	return []Step{
		{AtMS: 0, Actor: "A", Do: ActAcquire},
		{AtMS: pause, Actor: "A", Do: ActPause, ForMS: sec(40), Note: note},
		{AtMS: pause, Actor: "A", Do: ActWrite, Note: "the commit A prepared"},
		{AtMS: pause, Actor: "A", Do: ActRelease},
		{AtMS: sec(31), Actor: "B", Do: ActAcquire},
		{AtMS: sec(31), Actor: "B", Do: ActWork, ForMS: sec(2)},
		{AtMS: sec(33), Actor: "B", Do: ActWrite},
		{AtMS: sec(34), Actor: "B", Do: ActRelease},
	}
}

var redlockBuiltins = []builtin{
	{BuiltinInfo{Name: "redlock-clock-jump", Description: "Kleppmann 2016, scenario B, on 5 nodes: A takes nodes 1–3 (4 and 5 unreachable); at 5s node 3's clock jumps 30s and A's key there expires; B takes nodes 3–5 (1 and 2 unreachable) at 6s. Both hold a majority while A works: no guard prevents the overlap; with --fencing the store refuses A's older write."},
		func(p leaseParams) []Step {
			return splitBrain([]Step{{AtMS: sec(5), Do: ActClockJump, ByMS: sec(30), Nodes: []int{3}, Note: "C's clock jumps"}}, 0)
		}},
	{BuiltinInfo{Name: "redlock-pause", SafeGuarded: true, Description: "A GC pause of 40s while A's acquire replies are in flight on 5 nodes: its keys expire and B acquires at 31s; when A reads the replies, Redlock's validity check (30s − 40s elapsed − drift) fails and A releases instead of entering (antirez, \"Is Redlock safe?\")."},
		func(p leaseParams) []Step { return pauseAt(0, "GC pause while the replies are in flight") }},
	{BuiltinInfo{Name: "redlock-late-pause", Guard: "fencing", SafeGuarded: true, Description: "The same 40s pause 10ms after Redlock's validity check passed: A's keys expire, B acquires at 31s and writes; A wakes and its commit reaches the store. No check on the client catches it; Redlock issues no fencing token, and only a store counter with --fencing refuses the write (Kleppmann 2016)."},
		func(p leaseParams) []Step { return pauseAt(10, "GC pause after the validity check") }},
	{BuiltinInfo{Name: "redlock-restart", Description: "A takes nodes 1–3 (4 and 5 unreachable); at 5s node 3 restarts empty at once; B takes nodes 3–5 at 6s: two majorities. The persistence argument: without a delayed restart (or fsync on every write) a restart hands the lock out twice."},
		func(p leaseParams) []Step {
			return splitBrain([]Step{{AtMS: sec(5), Do: ActRestart, Nodes: []int{3}, Note: "no persistence"}}, sec(60))
		}},
	{BuiltinInfo{Name: "redlock-slow-boot", SafeGuarded: true, Description: "As redlock-restart, but node 3 crashes at 5s and stays down 35s, longer than the 30s lease (antirez's delayed restart): B cannot reach a majority at 6s, retries, and takes nodes 1, 2, 4, 5 once A releases at 21s."},
		func(p leaseParams) []Step {
			return splitBrain([]Step{
				{AtMS: sec(5), Do: ActCrash, Nodes: []int{3}},
				{AtMS: sec(40), Do: ActRestart, Nodes: []int{3}, Note: "delayed restart: down longer than the lease"},
			}, sec(60))
		}},
}
