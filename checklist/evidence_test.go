package checklist

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// trialJSON is a `lockctl trial -o json` result cut to what the checklist
// reads, plus a field it ignores.
func trialJSON(verdict string, seed int, faults []string, codes []string, notes ...string) []byte {
	var b strings.Builder
	b.WriteString(`{"verdict":"` + verdict + `","seed":` + strconv.Itoa(seed) + `,"workers":3,"duration_ms":8000,"ops":0,"lanes":[],"faults":[`)
	for i, f := range faults {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"kind":"` + f + `","at_ms":1000}`)
	}
	b.WriteString(`],"violations":[`)
	for i, c := range codes {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"code":"` + c + `","detail":"d` + strconv.Itoa(i) + `","source":"store"}`)
	}
	b.WriteString(`],"notes":[`)
	for i, n := range notes {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"` + n + `"`)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

func mustTrial(t *testing.T, file string, data []byte) *Trial {
	t.Helper()
	tr, err := ParseTrial(file, data)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestApplyEvidence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		trials []*Trial
		want   map[string]string // item id → status: reason prefix
	}{
		{"safe under every fault", []*Trial{mustTrial(t, "safe.json", trialJSON("safe", 1, []string{"pause", "kill", "partition", "expire"}, nil))},
			map[string]string{
				"cancellation.on-lease-loss":    "pass: trial safe.json (seed 1): 2 partition/expire faults in 8000 ms with 3 workers, and no stale write got through",
				"commit_check.boundary-refuses": "pass: trial safe.json (seed 1): 1 pause fault in 8000 ms with 3 workers, and a holder paused past its lease had its late writes refused",
				"recovery.idempotency-key":      "pass: trial safe.json (seed 1): 2 kill/partition faults in 8000 ms with 3 workers, and no effect was committed twice across the retries",
			}},
		{"a stale write under pause fails the boundary, not cancellation", []*Trial{
			mustTrial(t, "unsafe.json", trialJSON("unsafe", 7, []string{"pause", "expire"}, []string{"STALE_WRITE_ACCEPTED"})),
			mustTrial(t, "kills.json", trialJSON("safe", 3, []string{"kill"}, nil))},
			map[string]string{
				"commit_check.boundary-refuses": "fail: trial unsafe.json (seed 7), under pause, expire: STALE_WRITE_ACCEPTED: d0",
				"recovery.idempotency-key":      "pass: trial kills.json (seed 3): 1 kill/partition fault",
			}},
		{"a lost update under expiry alone fails cancellation", []*Trial{mustTrial(t, "expire.json", trialJSON("unsafe", 2, []string{"expire"}, []string{"INVARIANT_VIOLATED"}))},
			map[string]string{
				"cancellation.on-lease-loss":    "fail: trial expire.json (seed 2), under expire: INVARIANT_VIOLATED: d0",
				"commit_check.boundary-refuses": "fail: trial expire.json (seed 2), under expire: INVARIANT_VIOLATED: d0",
			}},
		{"a duplicate fails idempotency", []*Trial{mustTrial(t, "dup.json", trialJSON("unsafe", 4, []string{"kill"}, []string{"DUPLICATE_EFFECT"}))},
			map[string]string{"recovery.idempotency-key": "fail: trial dup.json (seed 4), under kill: DUPLICATE_EFFECT: d0"}},
		{"a safe trial that judged nothing shows nothing", []*Trial{mustTrial(t, "blind.json", trialJSON("safe", 5, []string{"pause", "kill", "expire"}, nil, "no client history: the workers printed nothing"))},
			map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Blank()
			r.Tasks[0].Spec = "task.yaml" // as if evaluated: the rest counts as the spec's word
			ApplyEvidence(r, tc.trials)
			got := map[string]string{}
			for _, it := range r.Tasks[0].Items {
				if it.Evidence != "" {
					got[it.ID] = string(it.Status) + ": " + it.Reason
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("answered %v, want %v", got, tc.want)
			}
			for id, want := range tc.want {
				if !strings.HasPrefix(got[id], want) {
					t.Errorf("%s = %q, want %q...", id, got[id], want)
				}
			}
			var set []string
			for _, it := range r.Tasks[0].Items {
				if _, ok := tc.want[it.ID]; ok {
					set = append(set, it.ID)
				}
			}
			if !reflect.DeepEqual(r.Evidence.Set, set) && len(set) > 0 {
				t.Errorf("Evidence.Set = %v, want %v", r.Evidence.Set, set)
			}
		})
	}
}

func TestParseTrialRefusesOtherJSON(t *testing.T) {
	t.Parallel()
	for _, data := range []string{`{"tasks":[]}`, `[1,2]`, `not json`} {
		if _, err := ParseTrial("x.json", []byte(data)); err == nil || !strings.Contains(err.Error(), "evidence x.json: not a `lockctl trial -o json` result") {
			t.Errorf("ParseTrial(%s) = %v", data, err)
		}
	}
}
