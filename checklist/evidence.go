package checklist

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/lockctl/lockctl/history"
)

// Trial is what the checklist reads of one `lockctl trial -o json` result
// (docs/trial.md): which faults ran, what was judged and what was found.
type Trial struct {
	// File names the evidence in reasons (set by ParseTrial).
	File       string `json:"-"`
	Verdict    string `json:"verdict"`
	Seed       uint64 `json:"seed"`
	Workers    int    `json:"workers"`
	DurationMS int64  `json:"duration_ms"`
	Ops        int    `json:"ops"`
	Violations []struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
	} `json:"violations"`
	Faults []struct {
		Kind string `json:"kind"`
	} `json:"faults"`
	Notes []string `json:"notes"`
	// Store describes the judged scratch database, in results that name it.
	Store json.RawMessage `json:"store"`
}

// noHistoryNote starts the note a trial adds when it judged no writes
// (no client history and no --store): a safe verdict then shows nothing.
const noHistoryNote = "no client history"

// ParseTrial reads one trial result. It returns an error when data is not
// JSON or has no verdict of safe, unsafe or inconclusive (not a trial
// result); an inconclusive one is evidence of nothing.
func ParseTrial(file string, data []byte) (*Trial, error) {
	t := &Trial{File: file}
	if err := json.Unmarshal(data, t); err != nil {
		return nil, fmt.Errorf("evidence %s: not a `lockctl trial -o json` result: %v", file, err)
	}
	if t.Verdict != history.VerdictSafe && t.Verdict != history.VerdictUnsafe && t.Verdict != history.VerdictInconclusive {
		return nil, fmt.Errorf("evidence %s: not a `lockctl trial -o json` result: verdict %q, want safe, unsafe or inconclusive", file, t.Verdict)
	}
	return t, nil
}

// judged reports whether the trial judged any writes (a client history or
// a database); without, its safe verdict is no evidence of anything.
func (t *Trial) judged() bool {
	if s := strings.TrimSpace(string(t.Store)); t.Ops > 0 || (s != "" && s != "null" && s != `""`) {
		return true
	}
	return !slices.ContainsFunc(t.Notes, func(n string) bool { return strings.HasPrefix(n, noHistoryNote) })
}

// faults counts the injected faults of the given kinds.
func (t *Trial) faults(kinds ...string) int {
	n := 0
	for _, f := range t.Faults {
		if slices.Contains(kinds, f.Kind) {
			n++
		}
	}
	return n
}

// found returns the first violation with one of the codes, or "".
func (t *Trial) found(codes ...string) string {
	for _, v := range t.Violations {
		if slices.Contains(codes, v.Code) {
			return v.Code + ": " + v.Detail
		}
	}
	return ""
}

func (t *Trial) name() string { return fmt.Sprintf("%s (seed %d)", t.File, t.Seed) }

// evidenceRule says how trials answer one item: a trial with one of
// failCodes (and, when failOnly is set, no fault outside tests) is its
// counterexample; a judged, safe trial with a fault of tests is its pass.
type evidenceRule struct {
	item      string
	tests     []string // faults that put the item to the test
	failCodes []string
	failOnly  bool   // a counterexample counts only without other faults
	why       string // what a pass shows
}

// evidenceRules: a pause is the fault only the write boundary can stop (the
// paused holder cannot notice anything, Kleppmann 2016); a partition or an
// early expiry leaves the holder running, so only there a stale write says
// it was not cancelled; kills and partitions are the lost replies that make
// a worker retry (Stripe, "Idempotent requests").
var evidenceRules = []evidenceRule{
	{item: "cancellation.on-lease-loss", tests: []string{"partition", "expire"}, failCodes: []string{history.CodeStaleWrite, history.CodeInvariant}, failOnly: true,
		why: "no stale write got through: the work stopped, or the write boundary refused it"},
	{item: "commit_check.boundary-refuses", tests: []string{"pause"}, failCodes: []string{history.CodeStaleWrite, history.CodeInvariant},
		why: "a holder paused past its lease had its late writes refused"},
	{item: "recovery.idempotency-key", tests: []string{"kill", "partition"}, failCodes: []string{history.CodeDuplicate},
		why: "no effect was committed twice across the retries"},
}

// EvidenceNote says what trial evidence set in a report and which items'
// verdicts still rest on the spec's word.
type EvidenceNote struct {
	Files []string `json:"files"`
	// Set are the item ids the trials answered.
	Set []string `json:"set"`
	// OnSpecWord are the item ids a rule answered from the spec alone.
	OnSpecWord []string `json:"on_spec_word"`
}

// ApplyEvidence sets the items that trials can answer, in every task of r:
// fail with the first counterexample, else pass with the first trial that
// put the item to the test and judged something, else the item keeps the
// spec's verdict (an item the spec says nothing of is located on its line
// 1). It records what it did in r.Evidence and recounts r.
func ApplyEvidence(r *Report, trials []*Trial) {
	note := &EvidenceNote{}
	for _, t := range trials {
		note.Files = append(note.Files, t.File)
	}
	set := map[string]Result{}
	for _, rule := range evidenceRules {
		if res, ok := rule.answer(trials); ok {
			set[rule.item] = res
			note.Set = append(note.Set, rule.item)
		}
	}
	for ti := range r.Tasks {
		task := &r.Tasks[ti]
		for i, it := range task.Items {
			if res, ok := set[it.ID]; ok {
				task.Items[i].Status, task.Items[i].Reason, task.Items[i].Evidence = res.Status, res.Reason, res.Evidence
				if task.Spec != "" && it.Line == 0 { // SARIF and GitHub locate a result on a line: the task's first
					task.Items[i].Line = 1
				}
			} else if task.Spec != "" && it.Status != StatusManual && !slices.Contains(note.OnSpecWord, it.ID) {
				note.OnSpecWord = append(note.OnSpecWord, it.ID)
			}
		}
	}
	r.Evidence = note
	r.Tally()
}

// answer returns the item's verdict from the trials, if any trial gives one.
func (rule evidenceRule) answer(trials []*Trial) (Result, bool) {
	for _, t := range trials {
		if rule.failOnly && len(t.Faults) > t.faults(rule.tests...) {
			continue
		}
		if v := t.found(rule.failCodes...); v != "" && (!rule.failOnly || t.faults(rule.tests...) > 0) {
			return Result{Status: StatusFail, Evidence: t.name(),
				Reason: fmt.Sprintf("trial %s, under %s: %s", t.name(), faultList(t), v)}, true
		}
	}
	for _, t := range trials {
		if n := t.faults(rule.tests...); n > 0 && t.Verdict == history.VerdictSafe && t.judged() {
			return Result{Status: StatusPass, Evidence: t.name(),
				Reason: fmt.Sprintf("trial %s: %d %s fault%s in %d ms with %d workers, and %s", t.name(), n, strings.Join(rule.tests, "/"), plural(n), t.DurationMS, t.Workers, rule.why)}, true
		}
	}
	return Result{}, false
}

// faultList names the kinds of faults a trial injected, in first-seen order.
func faultList(t *Trial) string {
	var kinds []string
	for _, f := range t.Faults {
		if !slices.Contains(kinds, f.Kind) {
			kinds = append(kinds, f.Kind)
		}
	}
	if len(kinds) == 0 {
		return "no faults"
	}
	return strings.Join(kinds, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
