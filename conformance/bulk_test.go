package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// bulkCases are the random-token libraries of issue 20 item 2, by the case
// whose driver, library and right layouts the bulk run reuses.
var bulkCases = []string{
	"redsync/default", "redislock/default", "rueidislock/default", "go-zero/ttl",
	"redlock4/default", "redlock5/default", "redis-semaphore/mutex", "ioredis-lock/default",
	"node-redis-warlock/default", "redis-py/ttl", "laravel/ttl",
}

// TestBulk writes 500 real locks per library into one server, scans it with
// `lockctl inspect --pattern '*'` and counts, per library, the values named
// as another library (a confident name, or a guess whose candidates leave
// the real one out), the values rightly given as a guess between several
// libraries, and any acquisition time outside now ± 1 day; every key a
// driver says it holds must be scanned. With
// CONFORMANCE_BULK_OUT=<file> it writes the rates as Markdown table rows
// (docs/conformance.md).
func TestBulk(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	owner := map[string]libCase{} // key → the library that wrote it
	wrote := map[string]int{}     // library → keys its driver said it holds
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range bulkCases {
		c := caseByID(t, id)
		argv := append(interpreter(t, c.Driver), c.Lib, "bulk", srv.addr, "bulk-"+c.Lib)
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys, err := runBulk(argv)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s bulk: %v", id, err)
			}
			for _, k := range keys {
				owner[k] = c
			}
			wrote[libName(id)] = len(keys)
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	tally := tallyScan(t, srv.addr, owner)
	var rows []string
	for _, id := range bulkCases {
		lib := libName(id)
		s := tally[lib]
		p := &problems{}
		for _, name := range sortedKeys(s.wrong) {
			p.add("%d of %d values (%.2f%%) named %s", s.wrong[name], s.total, pct(s.wrong[name], s.total), name)
		}
		if s.invented > 0 {
			p.add("%d of %d values got an acquisition time outside now ± 1 day", s.invented, s.total)
		}
		if s.total < 500 {
			p.add("only %d values scanned, want ≥ 500", s.total)
		}
		if s.total < wrote[lib] {
			p.add("%d values scanned of the %d keys the driver held", s.total, wrote[lib])
		}
		rows = append(rows, s.row(lib))
		judge(t, "bulk/"+lib, p)
	}
	t.Logf("bulk misattribution:\n%s", strings.Join(rows, "\n"))
	if out := os.Getenv("CONFORMANCE_BULK_OUT"); out != "" {
		_ = os.WriteFile(out, []byte(strings.Join(rows, "\n")+"\n"), 0o644)
	}
}

// bulkTally counts one library's scanned values.
type bulkTally struct {
	total, invented int
	wrong           map[string]int // layout name → values wrongly given it
	// ambiguous: candidates ("a or b") → values rightly named as a guess
	// between several libraries, or "no name, shape s" → values of a shape
	// many libraries write, named none (the honest answers for a shared shape).
	ambiguous map[string]int
}

// row is the library's line of the docs table: values, right, named as what.
func (s bulkTally) row(lib string) string {
	wrong := 0
	var as []string
	for _, name := range sortedKeys(s.wrong) {
		wrong += s.wrong[name]
		as = append(as, fmt.Sprintf("%s %d (%.2f%%)", name, s.wrong[name], pct(s.wrong[name], s.total)))
	}
	if len(as) == 0 {
		as = []string{"–"}
	}
	var amb []string
	for _, names := range sortedKeys(s.ambiguous) {
		amb = append(amb, fmt.Sprintf("%s %d (%.2f%%)", names, s.ambiguous[names], pct(s.ambiguous[names], s.total)))
	}
	if len(amb) == 0 {
		amb = []string{"–"}
	}
	return fmt.Sprintf("| %s | %d | %d | %.2f%% | %s | %s | %d |", lib, s.total, s.total-wrong,
		pct(wrong, s.total), strings.Join(as, ", "), strings.Join(amb, ", "), s.invented)
}

// runBulk runs a driver in bulk mode (2 minutes at most) and returns the keys it wrote.
func runBulk(argv []string) ([]string, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	timer := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.Output()
	var r reply
	if jerr := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil || jerr != nil || r.Op != "bulk" {
		return nil, fmt.Errorf("%v %v: %s %s %s", err, jerr, r.Error, out, stderr.String())
	}
	return r.Keys, nil
}

// tallyScan scans the whole keyspace with inspect --pattern and tallies it by library.
func tallyScan(t *testing.T, addr string, owner map[string]libCase) map[string]bulkTally {
	out := lockctl(t, addr, "inspect", "--pattern", "*", "-o", "jsonl")
	tally := map[string]bulkTally{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l lockJSON
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Key == "" {
			continue // the summary line
		}
		c, ok := owner[l.Key]
		if !ok {
			continue // a companion key a library wrote beside its lock
		}
		lib := libName(c.ID)
		s := tally[lib]
		if s.wrong == nil {
			s.wrong, s.ambiguous = map[string]int{}, map[string]int{}
		}
		s.total++
		switch cands := l.candidates(); {
		case !layoutRight(l, c.Layouts):
			s.wrong[l.Layout.Name]++
		case len(cands) > 1:
			s.ambiguous[strings.Join(cands, " or ")]++
		case l.Layout.Name == "unknown":
			s.ambiguous["no name, shape "+l.Layout.Shape]++
		}
		if l.Holder != nil && l.Holder.AcquiredAt != "" {
			if ts, err := time.Parse(time.RFC3339, l.Holder.AcquiredAt); err != nil || time.Since(ts).Abs() > 24*time.Hour {
				s.invented++
			}
		}
		tally[lib] = s
	}
	return tally
}

func caseByID(t *testing.T, id string) libCase {
	i := slices.IndexFunc(cases, func(c libCase) bool { return c.ID == id })
	if i < 0 {
		t.Fatalf("bulk case %s is not in cases", id)
	}
	return cases[i]
}

// libName is the library part of a case ID ("redlock5/default" → "redlock5").
func libName(id string) string { return strings.SplitN(id, "/", 2)[0] }

func pct(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(total)
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
