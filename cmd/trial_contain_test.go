//go:build linux

package cmd_test

import (
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
)

// peakRSS runs lockctl trial with one worker running cmd for 6s and
// returns lockctl's peak resident set (VmHWM, kB, read until it exits) and
// its JSON result.
func peakRSS(t *testing.T, worker string) (int, map[string]any) {
	t.Helper()
	p := startLockctl(t, "redis://127.0.0.1:1/0", "trial", "--duration", "6s", "--nemesis", "none", "--workers", "1", "-o", "json", "--", "sh", "-c", worker)
	hwm := 0
	status := "/proc/" + strconv.Itoa(p.Process.Pid) + "/status"
	for {
		b, err := os.ReadFile(status)
		if err != nil || strings.Contains(string(b), "State:\tZ") {
			break
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				hwm, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := p.exit(t); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, p.stderr.String())
	}
	var res map[string]any
	if err := json.Unmarshal(p.stdout.Bytes(), &res); err != nil {
		t.Fatalf("result: %v\n%s", err, p.stdout.String())
	}
	return hwm, res
}

// TestTrialOutputFloodIsBounded: a worker printing 100 MB on stdout, of
// invalid JSON lines or of operations, neither stops the trial nor grows
// lockctl beside a quiet worker's: the history is capped and the rest
// counted.
func TestTrialOutputFloodIsBounded(t *testing.T) {
	t.Parallel()
	quiet, _ := peakRSS(t, "exec sleep 100")
	bad, badRes := peakRSS(t, `yes '{"op":"ok",broken' | head -c 100000000; exec sleep 100`)
	// 32 kB lines: the history's 16 MiB of resources is full after 524 of them, soon even where a loaded machine parses slowly.
	ops, opsRes := peakRSS(t, `yes '{"op":"ok","resource":"`+strings.Repeat("r", 32000)+`","fence":1}' | head -c 100000000; exec sleep 100`)
	t.Logf("peak RSS: quiet %d kB, 100 MB invalid JSON %d kB (x%.1f), 100 MB operations %d kB (x%.1f)", quiet, bad, float64(bad)/float64(quiet), ops, float64(ops)/float64(quiet))
	// Unbounded, these 100 MB of operations took 332 MB (x15) on the machine where this was written.
	if bad > 3*quiet || ops > 5*quiet {
		t.Errorf("peak RSS quiet %d kB, invalid JSON %d kB, operations %d kB: want at most x3 and x5", quiet, bad, ops)
	}
	rep := opsRes["worker_reports"].([]any)[0].(map[string]any)
	kept, dropped := opsRes["ops"].(float64), rep["dropped_ops"].(float64)
	full := strings.Contains(strings.Join(notes(opsRes), "\n"), "client history full at 524 operations")
	if kept != 524 || dropped == 0 || !full || opsRes["verdict"] != "safe" {
		t.Errorf("ops %v, dropped %v, verdict %v, notes %q: want 524 kept, the rest counted and said", kept, dropped, opsRes["verdict"], notes(opsRes))
	}
	t.Logf("operations kept %v, dropped %v", kept, dropped)
	// Invalid lines are no operations: with no lock event either, nothing
	// was seen to judge (issue 33 §3), and the trial still ends judged.
	if rep := badRes["worker_reports"].([]any)[0].(map[string]any); rep["bad_lines"].(float64) == 0 || badRes["verdict"] != "inconclusive" {
		t.Errorf("bad_lines %v, verdict %v: want the invalid lines counted and the trial judged inconclusive", rep["bad_lines"], badRes["verdict"])
	}
}

func notes(res map[string]any) []string {
	var out []string
	for _, n := range res["notes"].([]any) {
		out = append(out, n.(string))
	}
	return out
}

// TestTrialDropsWhatAKilledTrialLeft: a trial killed with SIGKILL leaves
// its scratch database, its Redis directory and a helper in a session of
// its own; the next trial (PostgreSQL) or --cleanup (MariaDB) drops and
// kills them, and leaves a live trial's database alone. Not parallel:
// every trial start drops every killed trial's leftovers, so a parallel
// test's trial could drop these first and its own output would name them.
func TestTrialDropsWhatAKilledTrialLeft(t *testing.T) {
	for _, db := range []struct{ name, driver, store, dsn, list string }{
		{"postgres", "pgx", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
			"SELECT datname FROM pg_database WHERE datname LIKE 'lockctl_trial_%'"},
		{"mysql", "mysql", "mysql://root@127.0.0.1:3306/", "root@tcp(127.0.0.1:3306)/",
			"SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'lockctl_trial_%'"},
	} {
		t.Run(db.name, func(t *testing.T) { // not parallel: each drops what the other's killed trial left
			conn, err := sql.Open(db.driver, db.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			names := func() []string {
				rows, err := conn.Query(db.list)
				if err != nil {
					t.Fatalf("%s: %v (this test needs the server, .ci/run starts it)", db.name, err)
				}
				defer rows.Close()
				var out []string
				for rows.Next() {
					var n string
					_ = rows.Scan(&n)
					out = append(out, n)
				}
				return out
			}
			of := func(pid int) string { // the scratch database of lockctl pid, "" when none
				for _, n := range names() {
					if strings.HasPrefix(n, "lockctl_trial_"+strconv.Itoa(pid)+"_") {
						return n
					}
				}
				return ""
			}
			dir, tmp := t.TempDir(), t.TempDir() // tmp: the trials' own TMPDIR, which no other test's trial cleans
			killedPids, livePids := filepath.Join(dir, "killed"), filepath.Join(dir, "live")
			lockctl := func(args ...string) *exec.Cmd {
				return exec.Command("env", append([]string{"TMPDIR=" + tmp, "lockctl"}, args...)...)
			}
			worker := `setsid sleep 3001 & echo $! >> "$0"; exec sleep 3000`
			start := func(pids string) *proc {
				return startProc(t, "redis://127.0.0.1:1/0", lockctl("trial", "--duration", "2m", "--nemesis", "none", "--workers", "1", "--store", db.store, "--", "sh", "-c", worker, pids))
			}
			killed, live := start(killedPids), start(livePids)
			t.Cleanup(func() { _ = live.Process.Signal(os.Interrupt); live.exit(t) })
			var killedDB, liveDB string
			for end := time.Now().Add(20 * time.Second); (killedDB == "" || liveDB == "" || len(readPids(t, killedPids)) == 0 || len(readPids(t, livePids)) == 0) && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				killedDB, liveDB = of(killed.Process.Pid), of(live.Process.Pid)
			}
			if killedDB == "" || liveDB == "" {
				t.Fatalf("scratch databases %q and %q: want both trials' (stderr %s %s)", killedDB, liveDB, killed.stderr.String(), live.stderr.String())
			}
			if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed.exit(t)
			running := func(pids string) bool {
				for _, pid := range readPids(t, pids) {
					if st := procState(pid); st != "" && st != "Z" {
						return true
					}
				}
				return false
			}
			redisDirs, _ := filepath.Glob(filepath.Join(tmp, "lockctl-trial-redis-"+strconv.Itoa(killed.Process.Pid)+"_*"))
			// What a SIGKILL leaves until the next trial: the helper that left its session escapes with lockctl's death.
			if len(redisDirs) != 1 || !running(killedPids) {
				t.Fatalf("after SIGKILL: Redis directories %v, helper running %v: want the killed trial's leftovers", redisDirs, running(killedPids))
			}
			// trial/store's TestDropOrphans, run beside, may drop the database
			// first, and a lockctl trial outside this test binary the helper.
			dbNamed, helperNamed := of(killed.Process.Pid) != "", running(killedPids)
			var out string
			if db.name == "postgres" {
				next := startProc(t, "redis://127.0.0.1:1/0", lockctl("trial", "--duration", "1s", "--nemesis", "none", "--workers", "1", "--store", db.store, "--", "true"))
				if code := next.exit(t); code != 0 {
					t.Fatalf("next trial: exit %d: %s", code, next.stderr.String())
				}
				out = next.stderr.String()
				if strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "lockctl: dropped what killed trials left: ") {
					t.Errorf("next trial's stderr %q: want one line saying what it dropped", out)
				}
			} else {
				c := startProc(t, "redis://127.0.0.1:1/0", lockctl("trial", "--cleanup", "--store", db.store))
				if code := c.exit(t); code != 0 {
					t.Fatalf("--cleanup: exit %d: %s", code, c.stderr.String())
				}
				out = c.stdout.String()
			}
			for want, there := range map[string]bool{killedDB: dbNamed, redisDirs[0]: true, "pid " + readPids(t, killedPids)[0]: helperNamed, "pid " + strconv.Itoa(killed.Process.Pid) + " is gone": true} {
				if there && !strings.Contains(out, want) {
					t.Errorf("output does not name %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, liveDB) || of(live.Process.Pid) != liveDB || !running(livePids) {
				t.Errorf("the live trial's database %s or helper was touched:\n%s", liveDB, out)
			}
			if of(killed.Process.Pid) != "" {
				t.Errorf("the killed trial's database %s is still there", killedDB)
			}
			if _, err := os.Stat(redisDirs[0]); err == nil {
				t.Errorf("the killed trial's Redis directory %s is still there", redisDirs[0])
			}
			if running(killedPids) {
				t.Errorf("the killed trial's helper %v still runs", readPids(t, killedPids))
			}
		})
	}
}
