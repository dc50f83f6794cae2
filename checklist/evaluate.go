package checklist

import (
	"fmt"
	"time"

	"github.com/lockctl/lockctl/lockcore"
)

// Result is one item's verdict for one task: the stable JSON item of
// `lockctl checklist -o json` (docs/checklist.md). Line is the spec line the verdict
// comes from (0, omitted, without a spec).
type Result struct {
	ID       string `json:"id"`
	Section  string `json:"section"`
	Status   Status `json:"status"`
	Reason   string `json:"reason"`
	Line     int    `json:"line,omitempty"`
	Question string `json:"question"`
	Why      string `json:"why"`
	Verify   string `json:"verify"`
	Source   string `json:"source"`
	// Evidence names the trial result that answered the item (--evidence).
	Evidence string `json:"evidence,omitempty"`
}

// TaskReport is the review of one spec; Spec and Task are empty for the
// checklist without a spec.
type TaskReport struct {
	Spec  string   `json:"spec,omitempty"`
	Task  string   `json:"task,omitempty"`
	Items []Result `json:"items"`
	// Live is what the live cross-check observed (absent without --redis).
	Live *Observation `json:"live,omitempty"`
}

// Summary counts the items of every task by status.
type Summary struct {
	Pass   int `json:"pass"`
	Warn   int `json:"warn"`
	Fail   int `json:"fail"`
	Manual int `json:"manual"`
}

// Report is the whole review: `{"tasks":[...],"summary":{...}}`.
type Report struct {
	Tasks   []TaskReport `json:"tasks"`
	Summary Summary      `json:"summary"`
	// Evidence is what trial results answered (absent without --evidence).
	Evidence *EvidenceNote `json:"evidence,omitempty"`
}

// Options are the evaluation's inputs.
type Options struct {
	// Policy gives the thresholds: the lease for a budget and mode, the cap,
	// the renewal interval (lockcore.Policy; --lease-cap etc. change it).
	Policy lockcore.Policy
	// Cluster makes CrossCheck apply the Redis Cluster rule: a spec's lock
	// and fence keys for the value must share a hash slot.
	Cluster bool
}

// Blank returns the checklist without a spec: every item, status manual.
func Blank() *Report {
	t := TaskReport{Items: make([]Result, 0, len(items))}
	for _, it := range items {
		t.Items = append(t.Items, result(it, StatusManual, "no spec: answer by hand", 0))
	}
	r := &Report{Tasks: []TaskReport{t}}
	r.Tally()
	return r
}

func result(it Item, st Status, reason string, line int) Result {
	return Result{ID: it.ID, Section: it.Section, Status: st, Reason: reason, Line: line,
		Question: it.Question, Why: it.Why, Verify: it.Verify, Source: it.Source}
}

// Evaluate applies every item's rule to each spec, in the order given. It
// returns an error only when the policy is invalid.
func Evaluate(specs []*Spec, opts Options) (*Report, error) {
	r := &Report{Tasks: make([]TaskReport, 0, len(specs))}
	for _, s := range specs {
		t, err := evaluateOne(s, opts)
		if err != nil {
			return nil, err
		}
		r.Tasks = append(r.Tasks, t)
	}
	r.Tally()
	return r, nil
}

func evaluateOne(s *Spec, opts Options) (TaskReport, error) {
	want, err := opts.Policy.LeaseFor(time.Duration(s.Lock.Budget), s.Lock.Mode)
	if err != nil {
		return TaskReport{}, fmt.Errorf("%s: %w", s.File, err)
	}
	e := &env{s: s, policy: opts.Policy, want: want, lease: want.Lease}
	if s.Lock.Lease != 0 {
		e.lease = time.Duration(s.Lock.Lease)
	}
	t := TaskReport{Spec: s.File, Task: s.Task, Items: make([]Result, 0, len(items))}
	for _, it := range items {
		v := manual("task", "only a person can answer this")
		if it.rule != nil {
			v = it.rule(e)
		}
		t.Items = append(t.Items, result(it, v.status, v.reason, s.Line(v.path)))
	}
	return t, nil
}

// Tally recounts Summary from the items (after a live cross-check changed some).
func (r *Report) Tally() {
	r.Summary = Summary{}
	for _, t := range r.Tasks {
		for _, it := range t.Items {
			switch it.Status {
			case StatusPass:
				r.Summary.Pass++
			case StatusWarn:
				r.Summary.Warn++
			case StatusFail:
				r.Summary.Fail++
			case StatusManual:
				r.Summary.Manual++
			}
		}
	}
}

// Failed reports whether any item is at or worse than the threshold: fail
// only for StatusFail, fail or warn for StatusWarn (`--fail-on`).
func (r *Report) Failed(threshold Status) bool {
	if threshold == StatusWarn && r.Summary.Warn > 0 {
		return true
	}
	return r.Summary.Fail > 0
}
