package simulate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lockctl/lockctl/history"
)

// ExploreOptions choose how Explore searches: an exhaustive grid of Grid
// points per dimension, or Runs random schedules from Seed.
type ExploreOptions struct {
	Random bool
	Runs   int
	Seed   uint64
	Grid   int
	// Progress, if set, is called with the schedules run so far and the
	// total, every few thousand schedules and at the end.
	Progress func(done, total int)
}

// MaxGridSchedules caps an exhaustive grid (the base schedule aside):
// Explore lowers the points per dimension to stay under it (GridPoints), and
// refuses a grid that cannot fit even at 2 points per dimension.
const MaxGridSchedules = 2_000_000

// MaxGridDimensions is the most dimensions a grid of 2 points each fits
// under MaxGridSchedules (2^20 is 1048576).
const MaxGridDimensions = 20

// GridTooLargeError is a grid that cannot fit under MaxGridSchedules even at
// 2 points per dimension: the scenario has more than MaxGridDimensions.
type GridTooLargeError struct {
	Dimensions int
}

func (e *GridTooLargeError) Error() string {
	return fmt.Sprintf("%d dimensions to vary: a grid of even 2 points each is 2^%d schedules, over the cap of %d (at most %d dimensions)",
		e.Dimensions, e.Dimensions, MaxGridSchedules, MaxGridDimensions)
}

// Dimension is one varied quantity: a step's time or length, over
// [FromMS, ToMS].
type Dimension struct {
	Step   int    `json:"step"`
	Actor  string `json:"actor"`
	Action Action `json:"action"`
	Field  string `json:"field"`
	// Nodes are the Redlock nodes of a node fault or a partial partition.
	Nodes  []int `json:"nodes,omitempty"`
	FromMS int64 `json:"from_ms"`
	ToMS   int64 `json:"to_ms"`
}

// CodeCount is how many schedules broke one invariant.
type CodeCount struct {
	Code      string `json:"code"`
	Schedules int    `json:"schedules"`
}

// Counterexample is the shortest violating schedule found: its violations
// and the scenario file that replays it with --file.
type Counterexample struct {
	Violations []Violation `json:"violations"`
	File       string      `json:"file"`
}

// ExploreResult counts the schedules that broke each invariant. Verdict is
// unsafe when any did; Counterexample is null when none did. Grid is the
// points per dimension of a grid that varied something (GridPoints), Seed
// that of a random exploration.
type ExploreResult struct {
	Scenario       string          `json:"scenario"`
	Mode           string          `json:"mode"`
	Seed           *uint64         `json:"seed,omitempty"`
	Grid           int             `json:"grid,omitempty"`
	Guards         Guards          `json:"guards"`
	Dimensions     []Dimension     `json:"dimensions"`
	Schedules      int             `json:"schedules"`
	Violating      int             `json:"violating"`
	ByCode         []CodeCount     `json:"by_code"`
	Verdict        string          `json:"verdict"`
	Counterexample *Counterexample `json:"counterexample"`
}

// dimensions are the faults' times and lengths around a scenario: pause,
// partition (at, for), crash, failover and restart (at), clock_jump (at, by) and the
// length of blocking calls, over [0, horizon].
func dimensions(sc *Scenario, horizon int64) []Dimension {
	var ds []Dimension
	add := func(i int, field string, from int64) {
		st := sc.Steps[i]
		ds = append(ds, Dimension{Step: i, Actor: st.Actor, Action: st.Do, Field: field, Nodes: st.Nodes, FromMS: from, ToMS: horizon})
	}
	for i, st := range sc.Steps {
		switch st.Do {
		case ActPause, ActPartition:
			add(i, "at", 0)
			add(i, "for", 1)
		case ActCrash, ActFailover, ActRestart:
			add(i, "at", 0)
		case ActClockJump:
			add(i, "at", 0)
			add(i, "by", 1)
		case ActCall:
			add(i, "for", 1)
		}
	}
	return ds
}

func (d Dimension) set(st *Step, v int64) {
	switch d.Field {
	case "at":
		st.AtMS = v
	case "for":
		st.ForMS = v
	case "by":
		st.ByMS = v
	}
}

// Explore runs the scenario under many schedules of its faults (the base
// schedule first) and counts the violations per invariant, keeping the
// shortest counterexample: the smallest total fault length, then the
// earliest violation. It stops early with ctx's error when ctx is done,
// within a schedule too.
func Explore(ctx context.Context, sc Scenario, o ExploreOptions) (ExploreResult, error) {
	if err := ctx.Err(); err != nil {
		return ExploreResult{}, err
	}
	stop := newStopper(ctx)
	sc.normalize()
	p, err := sc.resolve()
	if err != nil {
		return ExploreResult{}, err
	}
	base := newEngine(&sc, p, sc.Guards, false)
	base.stop = stop
	if err := base.run(); err != nil {
		return ExploreResult{}, err
	}
	horizon := base.now + p.lease
	dims := dimensions(&sc, horizon)
	res := ExploreResult{Scenario: sc.Name, Mode: "grid", Guards: sc.Guards, Dimensions: dims, ByCode: []CodeCount{}}
	if res.Dimensions == nil {
		res.Dimensions = []Dimension{}
	}
	work := sc
	work.Steps = make([]Step, len(sc.Steps))
	copy(work.Steps, sc.Steps)
	e := newEngine(&work, p, sc.Guards, false)
	e.stop = stop
	counts := make([]int, len(Codes))
	var best []Step
	var bestSize int64
	try := func() error {
		e.reset()
		if err := e.run(); err != nil {
			return err
		}
		res.Schedules++
		if e.mask == 0 {
			return nil
		}
		res.Violating++
		for i := range Codes {
			if e.mask&(1<<i) != 0 {
				counts[i]++
			}
		}
		size := faultSize(work.Steps)
		if best == nil || size < bestSize {
			best, bestSize = append(best[:0], work.Steps...), size
		}
		return nil
	}
	if err := try(); err != nil {
		return res, err
	}
	// With nothing to vary every schedule is the base one: it ran.
	total, g := 1, 0
	if len(dims) > 0 && o.Random {
		total = max(o.Runs, 1)
	} else if len(dims) > 0 {
		if g, err = gridPoints(o.Grid, len(dims)); err != nil {
			return res, err
		}
		total = ipow(g, len(dims)) + 1
		res.Grid = g
	}
	progress := func(n int) {
		if o.Progress != nil {
			o.Progress(n, total)
		}
	}
	defer func() { progress(res.Schedules) }()
	// schedule runs the n-th schedule: the scenario with each dimension set
	// to at(d), reporting progress every 4096 (the engine checks for Ctrl-C).
	schedule := func(n int, at func(i int, d Dimension) int64) error {
		if n%4096 == 0 {
			progress(n)
		}
		copy(work.Steps, sc.Steps)
		for i, d := range dims {
			d.set(&work.Steps[d.Step], at(i, d))
		}
		return try()
	}
	if o.Random {
		res.Mode = "random"
		seed := o.Seed
		res.Seed = &seed
		rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
		random := func(_ int, d Dimension) int64 { return d.FromMS + rng.Int64N(d.ToMS-d.FromMS+1) }
		for n := 1; n < total; n++ {
			if err := schedule(n, random); err != nil {
				return res, err
			}
		}
	} else if len(dims) > 0 {
		idx := make([]int, len(dims))
		point := func(i int, d Dimension) int64 { return d.FromMS + (d.ToMS-d.FromMS)*int64(idx[i])/int64(g-1) }
		for n := 0; ; n++ {
			if err := schedule(n, point); err != nil {
				return res, err
			}
			k := 0
			for k < len(idx) {
				idx[k]++
				if idx[k] < g {
					break
				}
				idx[k] = 0
				k++
			}
			if k == len(idx) {
				break
			}
		}
	}
	if err := res.judge(sc, counts, best, stop); err != nil {
		return res, err
	}
	return res, nil
}

// judge fills res's counts by code and verdict from the schedules run
// (counts per code index); when one violated an invariant it replays best,
// the smallest, as the counterexample. It returns runScenario's and
// MarshalFile's errors.
func (res *ExploreResult) judge(sc Scenario, counts []int, best []Step, stop *stopper) error {
	for i, c := range counts {
		if c > 0 {
			res.ByCode = append(res.ByCode, CodeCount{Code: Codes[i], Schedules: c})
		}
	}
	res.Verdict = history.VerdictSafe
	if res.Violating > 0 {
		res.Verdict = history.VerdictUnsafe
		ce := sc
		ce.Steps = best
		ce.Name = sc.Name + "-counterexample"
		ce.Description = fmt.Sprintf("shortest counterexample found by exploring %s (%d of %d schedules violated an invariant)", sc.Name, res.Violating, res.Schedules)
		ran, err := runScenario(ce, stop)
		if err != nil {
			return err
		}
		file, err := MarshalFile(ce)
		if err != nil {
			return err
		}
		res.Counterexample = &Counterexample{Violations: ran.Violations, File: string(file)}
	}
	return nil
}

// faultSize is how much a schedule varies, in ms: the lengths of its
// faults and calls and its clock jumps added up (the smallest counterexample
// is kept).
func faultSize(steps []Step) int64 {
	var size int64
	for _, st := range steps {
		if st.Do.fault() || st.Do == ActCall {
			size += st.ForMS + st.ByMS
		}
	}
	return size
}

// GridPoints returns the points per dimension of the exhaustive grid Explore
// runs for sc when grid are asked for (at least 2, lowered until the grid
// fits under MaxGridSchedules), and how many dimensions sc varies (with
// none, only the base schedule runs). It returns a *GridTooLargeError when
// sc varies more than MaxGridDimensions.
func GridPoints(sc Scenario, grid int) (points, dims int, err error) {
	dims = len(dimensions(&sc, 0))
	if dims == 0 {
		return max(grid, 2), 0, nil
	}
	points, err = gridPoints(grid, dims)
	return points, dims, err
}

// gridPoints is at least 2 and lowered until the grid fits under
// MaxGridSchedules.
func gridPoints(g, dims int) (int, error) {
	if dims > MaxGridDimensions {
		return 0, &GridTooLargeError{Dimensions: dims}
	}
	// Start near the dims-th root of the cap: --grid can be any int.
	g = max(min(g, int(math.Pow(MaxGridSchedules, 1/float64(dims)))+1), 2)
	for g > 2 && ipow(g, dims) > MaxGridSchedules {
		g--
	}
	return g, nil
}

// ipow is b^n, or MaxGridSchedules+1 once it is over MaxGridSchedules (it
// never overflows).
func ipow(b, n int) int {
	p := 1
	for range n {
		p *= b
		if p > MaxGridSchedules {
			return MaxGridSchedules + 1
		}
	}
	return p
}
