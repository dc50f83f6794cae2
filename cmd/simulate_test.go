package cmd_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/internal/golden"
	"github.com/lockctl/lockctl/simulate"
)

// execute runs lockctl in-process with buffers, no TTY, no colour, in
// inprocEnv.
func execute(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return executeEnv(t, nil, args...)
}

// executeEnv is execute with the variables env (KEY=VALUE) added.
func executeEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cmd.Execute(args, &cmd.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, Env: inprocEnv(t, env...)})
	return out.String(), errOut.String(), code
}

// Golden outputs of every built-in scenario, with all guards on and with
// its guard (or all guards, for those no guard fixes) off.
func TestSimulateGolden(t *testing.T) {
	t.Parallel()
	for _, b := range simulate.Builtins() {
		off := []string{"--fencing=false", "--owner-check=false", "--cancel-on-loss=false", "--idempotency-key=false"}
		if b.Guard != "" {
			off = []string{"--" + strings.ReplaceAll(b.Guard, "_", "-") + "=false"}
		}
		for _, variant := range []struct {
			name  string
			flags []string
		}{{"guards_on", nil}, {"guards_off", off}} {
			t.Run(b.Name+"/"+variant.name, func(t *testing.T) {
				t.Parallel()
				for _, format := range []string{"table", "json"} {
					args := append([]string{"simulate", b.Name, "-o", format}, variant.flags...)
					out, errOut, code := execute(t, args...)
					if code != 0 {
						t.Fatalf("exit %d: %s", code, errOut)
					}
					golden.Assert(t, []byte(out), "."+format)
					again, _, _ := execute(t, args...)
					if again != out {
						t.Errorf("%s: two runs differ", format)
					}
				}
			})
		}
	}
}

func TestSimulateFormats(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"mermaid", "yaml", "junit"} {
		out, errOut, code := execute(t, "simulate", "failover", "--fence-source", "store", "-o", format)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		golden.Assert(t, []byte(out), "."+format)
	}
	out, _, code := execute(t, "simulate", "--list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	golden.Assert(t, []byte(out), ".table")
}

func TestSimulateExpect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"simulate", "stale-writer", "--expect", "safe"}, 0},
		{[]string{"simulate", "stale-writer", "--expect", "unsafe"}, 1},
		{[]string{"simulate", "stale-writer", "--fencing=false", "--expect", "safe"}, 1},
		{[]string{"simulate", "stale-writer", "--fencing=false"}, 0},
		{[]string{"simulate", "failover", "--expect", "unsafe", "-o", "mermaid"}, 0},
		{[]string{"simulate", "failover", "--expect", "safe", "-o", "junit"}, 1},
		{[]string{"simulate", "renewal-loss", "--explore", "--expect", "safe"}, 0},
		{[]string{"simulate", "renewal-loss", "--cancel-on-loss=false", "--explore", "--expect", "safe"}, 1},
	} {
		_, errOut, code := execute(t, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, errOut)
		}
		if tc.code == 1 && errOut != "" {
			t.Errorf("%v: --expect prints nothing more, got %q", tc.args, errOut)
		}
	}
}

func TestSimulateInputErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\npolicy: {lease: 30s}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n  - {at: 1s, actor: A, do: pause, for: 37}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "nope"}, `scenario "nope" is not one of stale-writer`},
		{[]string{"simulate"}, "name a scenario"},
		{[]string{"simulate", "stale-writer", "--pause", "37"}, `pause "37" has no unit; did you mean 37s?`},
		{[]string{"simulate", "stale-writer", "--expect", "maybe"}, `expect "maybe" is not one of safe, unsafe`},
		{[]string{"simulate", "stale-writer", "--check", "pttl"}, `check "pttl" is not one of none, ttl`},
		{[]string{"simulate", "stale-writer", "--mode", "fast"}, `mode "fast" is not one of trusted, ordinary`},
		{[]string{"simulate", "stale-writer", "-o", "csv"}, `output "csv" is not one of table, json, yaml, mermaid`},
		{[]string{"simulate", "--file", bad}, `bad.yaml: line 5: events[1].for: "37" has no unit; did you mean 37s?`},
		{[]string{"simulate", "--file", filepath.Join(dir, "missing.yaml")}, "no such file or directory"},
		{[]string{"simulate", "--explore", "stale-writer", "--grid", "1"}, "grid 1 must be at least 2"},
	} {
		_, errOut, code := execute(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 with %q", tc.args, code, errOut, tc.want)
		}
		if strings.Count(strings.TrimSpace(errOut), "\n") > 1 {
			t.Errorf("%v: want one error line and a hint, got %q", tc.args, errOut)
		}
	}
}

func TestSimulateSchema(t *testing.T) {
	t.Parallel()
	out, _, code := execute(t, "simulate", "schema")
	if code != 0 || out != string(simulate.Schema()) {
		t.Fatalf("exit %d", code)
	}
}

// Flags become options: a runF that only captures them.
func TestSimulateFlags(t *testing.T) {
	t.Parallel()
	capture := func(args ...string) *cmd.SimulateOptions {
		t.Helper()
		var got *cmd.SimulateOptions
		f := &cmd.Factory{IO: &cmd.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}, Env: inprocEnv(t)}}
		root := cmd.NewRootCmd(f)
		for _, c := range root.Commands() {
			if c.Name() == "simulate" {
				root.RemoveCommand(c)
			}
		}
		root.AddCommand(cmd.NewCmdSimulate(f, func(o *cmd.SimulateOptions) error { got = o; return nil }))
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return got
	}
	o := capture("simulate", "stale-writer", "--fencing=false", "--check", "ttl", "--pause", "20s", "--expect", "unsafe")
	if o.Scenario.Guards.Fencing || !o.Scenario.Guards.OwnerCheck || o.Scenario.Check != simulate.CheckTTL || o.Expect != "unsafe" || o.Live {
		t.Errorf("options: %+v", o)
	}
	if i := slices.IndexFunc(o.Scenario.Steps, func(s simulate.Step) bool { return s.Do == simulate.ActPause }); o.Scenario.Steps[i].ForMS != 20000 {
		t.Errorf("pause %d ms, want 20000", o.Scenario.Steps[i].ForMS)
	}
	o = capture("simulate", "--file", "../simulate/testdata/case7-gc-pause.yaml", "--owner-check=false")
	if o.Scenario.FenceStart != 17 || o.Scenario.Guards.OwnerCheck || !o.Scenario.Guards.Fencing {
		t.Errorf("file options: %+v", o.Scenario)
	}
	o = capture("simulate", "crash-recovery", "--budget", "13h", "--mode", "ordinary", "--redis", "redis://127.0.0.1:1/0", "--time-scale", "0.05")
	if !o.Live || o.TimeScale != 0.05 || o.Scenario.Policy.Budget.Hours() != 13 || o.Scenario.Policy.Mode != "ordinary" {
		t.Errorf("live options: %+v", o)
	}
	o = capture("simulate", "renewal-loss", "--explore", "--runs", "500", "--seed", "3")
	if !o.Explore || !o.ExploreOpts.Random || o.ExploreOpts.Runs != 500 || o.ExploreOpts.Seed != 3 {
		t.Errorf("explore options: %+v", o.ExploreOpts)
	}
}

// A grid lowered to fit the cap is said on stderr, once, naming the value
// used and the flag's (it was lowered silently).
func TestSimulateGridLowered(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	six := filepath.Join(dir, "six.yaml")
	if err := os.WriteFile(six, []byte("name: six\npolicy: {lease: 30s}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n  - {at: 1s, actor: A, do: pause, for: 1s}\n  - {at: 2s, actor: A, do: pause, for: 1s}\n  - {at: 3s, actor: A, do: pause, for: 1s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "stale-writer", "--explore", "--grid", "2000"}, "lockctl: --grid 2000 over 2 dimensions is more than the cap of 2000000 schedules: lowered to 1414 points per dimension\n"},
		{[]string{"simulate", "--file", six, "--explore"}, "lockctl: the default --grid 12 over 6 dimensions is more than the cap of 2000000 schedules: lowered to 11 points per dimension\n"},
		{[]string{"simulate", "stale-writer", "--explore", "--grid", "1414"}, ""},
		{[]string{"simulate", "stale-writer", "--explore", "--runs", "10"}, ""},
	} {
		var errOut bytes.Buffer
		f := &cmd.Factory{IO: &cmd.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut, Env: inprocEnv(t)}}
		root := cmd.NewRootCmd(f)
		for _, c := range root.Commands() {
			if c.Name() == "simulate" {
				root.RemoveCommand(c)
			}
		}
		root.AddCommand(cmd.NewCmdSimulate(f, func(*cmd.SimulateOptions) error { return nil }))
		root.SetArgs(tc.args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if errOut.String() != tc.want {
			t.Errorf("%v: stderr %q, want %q", tc.args, errOut.String(), tc.want)
		}
	}
}

// Every budget-derived lease follows the configured policy (flag > env >
// config file > defaults), as lease's does; an explicit lease, a built-in's
// or a file's, keeps its numbers (the policy applied only with --budget).
func TestSimulatePolicyPrecedence(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	budget := write("budget.yaml", "name: b\npolicy: {budget: 20m, mode: trusted}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n")
	ownCap := write("own-cap.yaml", "name: c\npolicy: {budget: 20m, mode: trusted, lease_cap: 50s, renew_every: 5s}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n")
	fixed := write("fixed.yaml", "name: f\npolicy: {lease: 30s}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n")
	config := write("config.yaml", "policy:\n  lease_cap: 40s\n  renew_bound: 20h\n")
	if err := os.Mkdir(filepath.Join(dir, "proj"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("proj/lockctl.yaml", "policy:\n  lease_cap: 50s\n")
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want simulate.LeaseReport
		// proj runs in a directory with a lockctl.yaml setting a 50s cap.
		proj bool
	}{
		{map[string]string{"LOCKCTL_POLICY_LEASE_CAP": "45s"}, []string{"crash-recovery"}, simulate.LeaseReport{LeaseMS: 45000, RenewEveryMS: 15000, RenewBoundMS: 12 * 3600000}, false},
		{map[string]string{"LOCKCTL_POLICY_RENEW_EVERY": "7s"}, []string{"crash-recovery"}, simulate.LeaseReport{LeaseMS: 60000, RenewEveryMS: 7000, RenewBoundMS: 12 * 3600000}, false},
		{map[string]string{"LOCKCTL_POLICY_RENEW_BOUND": "20h"}, []string{"long-budget"}, simulate.LeaseReport{LeaseMS: 60000, RenewEveryMS: 20000, RenewBoundMS: 20 * 3600000}, false},
		{map[string]string{"LOCKCTL_POLICY_LEASE_CAP": "45s"}, []string{"stale-writer", "--mode", "trusted"}, simulate.LeaseReport{LeaseMS: 30000, RenewEveryMS: 10000, RenewBoundMS: 12 * 3600000}, false},
		{map[string]string{"LOCKCTL_POLICY_RENEW_EVERY": "7s"}, []string{"crash-recovery", "--renew-every", "9s"}, simulate.LeaseReport{LeaseMS: 60000, RenewEveryMS: 9000, RenewBoundMS: 12 * 3600000}, false},
		{map[string]string{"LOCKCTL_POLICY_LEASE_CAP": "45s"}, []string{"--file", budget}, simulate.LeaseReport{LeaseMS: 45000, RenewEveryMS: 15000, RenewBoundMS: 12 * 3600000}, false},
		{nil, []string{"--file", budget, "--config", config}, simulate.LeaseReport{LeaseMS: 40000, RenewEveryMS: 13333, RenewBoundMS: 20 * 3600000}, false},
		{map[string]string{"LOCKCTL_POLICY_LEASE_CAP": "45s"}, []string{"--file", budget, "--config", config}, simulate.LeaseReport{LeaseMS: 45000, RenewEveryMS: 15000, RenewBoundMS: 20 * 3600000}, false},
		{nil, []string{"crash-recovery", "--config", config}, simulate.LeaseReport{LeaseMS: 40000, RenewEveryMS: 13333, RenewBoundMS: 20 * 3600000}, false},
		{nil, []string{"crash-recovery"}, simulate.LeaseReport{LeaseMS: 50000, RenewEveryMS: 16666, RenewBoundMS: 12 * 3600000}, true},
		{map[string]string{"LOCKCTL_POLICY_LEASE_CAP": "45s"}, []string{"crash-recovery"}, simulate.LeaseReport{LeaseMS: 45000, RenewEveryMS: 15000, RenewBoundMS: 12 * 3600000}, true},
		{nil, []string{"--file", budget}, simulate.LeaseReport{LeaseMS: 50000, RenewEveryMS: 16666, RenewBoundMS: 12 * 3600000}, true},
		{nil, []string{"crash-recovery"}, simulate.LeaseReport{LeaseMS: 60000, RenewEveryMS: 20000, RenewBoundMS: 12 * 3600000}, false},
		// --lease-cap and --renew-bound come before the variables and the file.
		{map[string]string{"LOCKCTL_POLICY_LEASE_CAP": "45s"}, []string{"crash-recovery", "--lease-cap", "30s", "--config", config}, simulate.LeaseReport{LeaseMS: 30000, RenewEveryMS: 10000, RenewBoundMS: 20 * 3600000}, false},
		{map[string]string{"LOCKCTL_POLICY_RENEW_BOUND": "20h"}, []string{"long-budget", "--renew-bound", "14h"}, simulate.LeaseReport{LeaseMS: 60000, RenewEveryMS: 20000, RenewBoundMS: 14 * 3600000}, false},
		{nil, []string{"stale-writer", "--budget", "100s", "--lease-cap", "10s"}, simulate.LeaseReport{LeaseMS: 10000, RenewEveryMS: 3333, RenewBoundMS: 12 * 3600000}, true},
		// Explicit numbers describe the incident.
		{map[string]string{"LOCKCTL_POLICY_LEASE_CAP": "45s", "LOCKCTL_POLICY_RENEW_EVERY": "7s"}, []string{"--file", ownCap}, simulate.LeaseReport{LeaseMS: 50000, RenewEveryMS: 5000, RenewBoundMS: 12 * 3600000}, false},
		{map[string]string{"LOCKCTL_POLICY_LEASE_CAP": "45s", "LOCKCTL_POLICY_RENEW_EVERY": "7s"}, []string{"--file", fixed}, simulate.LeaseReport{LeaseMS: 30000}, false},
		{map[string]string{"LOCKCTL_POLICY_LEASE_CAP": "5s", "LOCKCTL_POLICY_RENEW_EVERY": "1s"}, []string{"renewal-loss"}, simulate.LeaseReport{LeaseMS: 10000, RenewEveryMS: 5000}, false},
		{map[string]string{"LOCKCTL_POLICY_LEASE_CAP": "5s", "LOCKCTL_POLICY_RENEW_EVERY": "1s"}, []string{"stale-writer"}, simulate.LeaseReport{LeaseMS: 30000}, false},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Chdir(dir)
			if tc.proj {
				t.Chdir(filepath.Join(dir, "proj"))
			}
			var env []string
			for k, v := range tc.env {
				env = append(env, k+"="+v)
			}
			out, errOut, code := executeEnv(t, env, append([]string{"simulate", "-o", "json"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("%v %v: exit %d: %s", tc.env, tc.args, code, errOut)
			}
			var res simulate.Result
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatal(err)
			}
			got := simulate.LeaseReport{LeaseMS: res.Lease.LeaseMS, RenewEveryMS: res.Lease.RenewEveryMS, RenewBoundMS: res.Lease.RenewBoundMS}
			if got != tc.want {
				t.Errorf("%v %v: lease %+v, want %+v", tc.env, tc.args, got, tc.want)
			}
		})
	}
	// The take-over of crash-recovery waits one configured lease.
	out, _, _ := executeEnv(t, []string{"LOCKCTL_POLICY_LEASE_CAP=45s"}, "simulate", "crash-recovery")
	if !strings.Contains(out, "take-over came 35s after A crashed: its key lived up to one lease (45s)") {
		t.Errorf("crash-recovery under a 45s cap:\n%s", out)
	}
}

// An actor named as another participant (R is Redis) or as a Mermaid
// keyword (end closes a block) gets an id of its own in -o mermaid, and one
// named P_R keeps an id apart from R's P_R: two participants with one id
// are drawn as one.
func TestSimulateMermaidActorIDs(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "collide.yaml")
	spec := "name: collide\npolicy: {lease: 30s}\nevents:\n  - {at: 0s, actor: R, do: acquire}\n  - {at: 1s, actor: end, do: acquire}\n  - {at: 2s, actor: P_R, do: acquire}\n"
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := execute(t, "simulate", "--file", file, "-o", "mermaid")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"participant P_R as R\n", "participant P_end as end\n", "participant R as Redis\n", "P_R->>R: 0s SET NX PX", "R--xP_end: not obtained"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "participant R\n") || strings.Contains(out, "\n    end->>") {
		t.Errorf("an actor's id is R or end:\n%s", out)
	}
	ids := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "participant ") {
			continue
		}
		id, name, _ := strings.Cut(strings.TrimPrefix(l, "participant "), " as ")
		if name == "" {
			name = id
		}
		if other, dup := ids[id]; dup {
			t.Errorf("actors %s and %s share the participant id %s:\n%s", other, name, id, out)
		}
		ids[id] = name
	}
}

// A Redlock run's Mermaid diagram notes each node's holder when it changes;
// its exploration names node faults by node.
func TestSimulateRedlockFormats(t *testing.T) {
	out, errOut, code := execute(t, "simulate", "redlock-clock-jump", "-o", "mermaid")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden.Assert(t, []byte(out), ".mermaid")
	out, errOut, code = execute(t, "simulate", "redlock-slow-boot", "--explore", "--grid", "3")
	if code != 0 || !strings.Contains(out, "varied: node 3's restart, at from 0s to") || !strings.Contains(out, "varied: A's partition from nodes 4, 5, at") {
		t.Errorf("exit %d: %s%s", code, out, errOut)
	}
}
