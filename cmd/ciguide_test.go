package cmd_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// workflowStep is one step of a GitHub Actions job.
type workflowStep struct {
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	With map[string]any    `yaml:"with"`
	Run  string            `yaml:"run"`
	If   string            `yaml:"if"`
	Env  map[string]string `yaml:"env"`
}

// The CI guide's job works as written (issue 32 §5: its install step
// fetched a module no proxy serves): its run steps are executed as Actions
// runs them (bash -e, GITHUB_PATH read after each step) in a checkout with
// lockctl's source as the submodule tools/lockctl and a failing spec under
// tasks/; the uses steps are checked for what the run steps rely on.
func TestCIGuideWorkflow(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	steps := guideSteps(t, filepath.Join(root, "docs", "guides", "ci-review.md"))
	work, runner := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec, err := os.ReadFile(filepath.Join(root, "testdata", "tasks", "payout.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "tasks", "payout.yaml"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(work, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(work, "tools", "lockctl")); err != nil {
		t.Fatal(err)
	}
	githubPath := filepath.Join(runner, "github_path")
	path := os.Getenv("PATH")
	exit := map[string]int{}
	failed := false
	for i, st := range steps {
		switch {
		case strings.HasPrefix(st.Uses, "actions/checkout@"):
			if st.With["submodules"] != true {
				t.Errorf("step %d: checkout without submodules: tools/lockctl would be empty", i)
			}
		case strings.HasPrefix(st.Uses, "github/codeql-action/upload-sarif@"):
			checkSARIF(t, filepath.Join(work, st.With["sarif_file"].(string)))
		case st.Run != "":
			if failed && !strings.Contains(st.If, "always()") {
				continue
			}
			c := exec.Command("bash", "-e", "-c", st.Run)
			c.Dir = work
			// HOME stays: Go's build cache is under it (a new one is a cold build).
			c.Env = append(os.Environ(), "PATH="+path, "RUNNER_TEMP="+runner, "GITHUB_PATH="+githubPath,
				"GITHUB_ACTIONS=true", "XDG_CONFIG_HOME="+runner, "CI=true")
			out, err := c.CombinedOutput()
			code := c.ProcessState.ExitCode()
			if err != nil && code < 0 {
				t.Fatalf("step %q: %v", st.Name, err)
			}
			exit[st.Name] = code
			failed = failed || code != 0
			t.Logf("step %q: exit %d\n%s", st.Name, code, out)
			if strings.Contains(st.Run, "-o github") && !strings.Contains(string(out), "::error file=tasks/payout.yaml") {
				t.Errorf("step %q printed no annotation on tasks/payout.yaml:\n%s", st.Name, out)
			}
			if added, err := os.ReadFile(githubPath); err == nil {
				for _, dir := range strings.Fields(string(added)) {
					if !strings.Contains(path, dir) {
						path = dir + string(os.PathListSeparator) + path
					}
				}
			}
		}
	}
	want := map[string]int{"Build lockctl from its checkout": 0, "Lock review (annotations on the spec lines)": 1, "SARIF for code scanning": 0}
	for name, code := range want {
		if got, ok := exit[name]; !ok || got != code {
			t.Errorf("step %q: exit %d (ran: %v), want %d", name, got, ok, code)
		}
	}
	if lp, err := exec.LookPath(filepath.Join(runner, "bin", "lockctl")); err != nil {
		t.Errorf("the build step left no lockctl in $RUNNER_TEMP/bin: %v", err)
	} else if !strings.HasPrefix(path, filepath.Dir(lp)) {
		t.Errorf("GITHUB_PATH did not put %s first on PATH", filepath.Dir(lp))
	}
}

// guideSteps returns the steps of the one ```yaml job in the guide.
func guideSteps(t *testing.T, guide string) []workflowStep {
	t.Helper()
	text, err := os.ReadFile(guide)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(text), "```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("%s has no ```yaml block", guide)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []workflowStep `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal([]byte(block), &wf); err != nil {
		t.Fatalf("%s: the workflow is not YAML: %v", guide, err)
	}
	if len(wf.Jobs) != 1 {
		t.Fatalf("%s: %d jobs, want 1", guide, len(wf.Jobs))
	}
	for _, job := range wf.Jobs {
		return job.Steps
	}
	return nil
}

// checkSARIF fails unless path holds a SARIF 2.1.0 log with a result.
func checkSARIF(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("the SARIF upload finds no file: %v", err)
		return
	}
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []json.RawMessage `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &log); err != nil || log.Version != "2.1.0" || len(log.Runs) == 0 || len(log.Runs[0].Results) == 0 {
		t.Errorf("%s is no SARIF 2.1.0 log with results (%v): %.200s", path, err, data)
	}
}
