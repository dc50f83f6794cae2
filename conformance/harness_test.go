package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bin holds the paths TestMain built or found: lockctl from the parent
// module, the Go driver, and the interpreters of the other drivers.
var bin struct {
	lockctl, golock   string
	node, python, php string
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lockctl-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bin.golock = filepath.Join(dir, "golock")
	builds := []*exec.Cmd{exec.Command("go", "build", "-o", bin.golock, "./cmd/golock")}
	// CONFORMANCE_LOCKCTL runs the suite against another lockctl binary
	// (a branch's); by default the parent module is built, from its own
	// directory so that its go.mod rules.
	if bin.lockctl = os.Getenv("CONFORMANCE_LOCKCTL"); bin.lockctl == "" {
		bin.lockctl = filepath.Join(dir, "lockctl")
		parent := exec.Command("go", "build", "-o", bin.lockctl, ".")
		parent.Dir = ".."
		builds = append(builds, parent)
	}
	for _, cmd := range builds {
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
			os.Exit(2)
		}
	}
	bin.node, _ = exec.LookPath("node")
	// Debian's python3 (python3-redis is installed for it), not a pyenv shim.
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		bin.python = "/usr/bin/python3"
	}
	bin.php, _ = exec.LookPath("php")
	code := m.Run()
	if line := knownSummary(); line != "" {
		fmt.Println(line)
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// interpreter returns the command line that starts a driver, and fails the
// test, naming what to install, when its runtime is missing.
func interpreter(t *testing.T, driver string) []string {
	t.Helper()
	var argv []string
	var missing string
	switch driver {
	case "go":
		argv = []string{bin.golock}
	case "node":
		if _, err := os.Stat("node/node_modules"); bin.node == "" || err != nil {
			missing = "node and node/node_modules (cd conformance/node && npm ci)"
		}
		argv = []string{bin.node, "node/driver.mjs"}
	case "python":
		if bin.python == "" || exec.Command(bin.python, "-c", "import redis").Run() != nil {
			missing = "/usr/bin/python3 with python3-redis (apt-get install python3-redis)"
		}
		argv = []string{bin.python, "python/driver.py"}
	case "php":
		if bin.php == "" || exec.Command(bin.php, "-r", "exit(class_exists('Redis') ? 0 : 1);").Run() != nil {
			missing = "php with php-redis (apt-get install php-cli php-redis php-symfony-lock php-illuminate-cache)"
		}
		argv = []string{bin.php, "php/driver.php"}
	}
	if missing != "" {
		t.Fatalf("missing %s (bash conformance/run installs it)", missing)
	}
	return argv
}

// holder is one running driver process holding a lock.
type holder struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	// Keys and OwnerHex are what the driver said it wrote.
	Keys     []string `json:"keys"`
	OwnerHex string   `json:"owner_hex"`
}

// reply is one JSON line of a driver.
type reply struct {
	Op       string   `json:"op"`
	Error    string   `json:"error"`
	Keys     []string `json:"keys"`
	OwnerHex string   `json:"owner_hex"`
}

// startHolder runs a driver and waits (30 s at most) for its "acquired" line.
func startHolder(t *testing.T, c libCase, mode, addr, name string) *holder {
	t.Helper()
	return startHolderKept(t, t, c, mode, addr, name)
}

// startHolderKept is startHolder whose driver lives until keep ends: a
// parallel subtest starts it, its parent's later steps read its lock.
func startHolderKept(t, keep *testing.T, c libCase, mode, addr, name string) *holder {
	t.Helper()
	argv := append(interpreter(t, c.Driver), c.Lib, mode, addr, name)
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	h := &holder{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	keep.Cleanup(h.kill)
	r := h.await("acquired", 30*time.Second)
	if r.Op != "acquired" {
		t.Fatalf("%s %s: no lock: %s %s", c.Lib, mode, r.Error, stderr.String())
	}
	h.Keys, h.OwnerHex = r.Keys, r.OwnerHex
	return h
}

// await reads the driver's next line, failing the test on an error line or timeout.
func (h *holder) await(op string, timeout time.Duration) reply {
	h.t.Helper()
	select {
	case line, ok := <-h.lines:
		if !ok {
			h.t.Fatalf("driver exited before %q", op)
		}
		var r reply
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			h.t.Fatalf("driver line %q: %v", line, err)
		}
		if r.Op == "error" {
			h.t.Fatalf("driver failed on %q: %s", op, r.Error)
		}
		return r
	case <-time.After(timeout):
		h.t.Fatalf("driver gave no %q line in %s", op, timeout)
	}
	return reply{}
}

// do sends a command line ("renew", "release") and waits for its reply.
func (h *holder) do(cmd string) {
	h.t.Helper()
	if _, err := io.WriteString(h.stdin, cmd+"\n"); err != nil {
		h.t.Fatalf("driver stdin: %v", err)
	}
	h.await(cmd, 15*time.Second)
}

// kill ends the driver with SIGKILL: the crash step, and cleanup.
func (h *holder) kill() {
	if h.cmd.ProcessState == nil {
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
	}
}

// lockJSON is the part of `lockctl inspect -o json` the suite asserts;
// Raw keeps the whole object for fields a layout adds (holders, candidates).
type lockJSON struct {
	Key      string `json:"key"`
	Exists   bool   `json:"exists"`
	OwnerHex string `json:"owner_hex"`
	Role     string `json:"role"`
	Layout   struct {
		Name       string          `json:"name"`
		Confidence string          `json:"confidence"`
		Candidates json.RawMessage `json:"candidates"`
		Shape      string          `json:"shape"`
		SeenIn     []string        `json:"seen_in"`
	} `json:"layout"`
	Holder *struct {
		AcquiredAt string `json:"acquired_at"`
		Metadata   string `json:"metadata"`
	} `json:"holder"`
	Fence *struct {
		Value   *int64 `json:"value"`
		Counter *int64 `json:"counter"`
	} `json:"fence"`
	Findings []findingJSON   `json:"findings"`
	Raw      json.RawMessage `json:"-"`
}

// findingJSON is one of a lock's findings.
type findingJSON struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// candidates returns the layout's candidate names, whatever shape the
// detector gives them (a list of names or of {name: ...} objects).
func (l lockJSON) candidates() []string {
	var names []string
	if json.Unmarshal(l.Layout.Candidates, &names) == nil {
		return names
	}
	var objs []struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(l.Layout.Candidates, &objs)
	for _, o := range objs {
		names = append(names, o.Name)
	}
	return names
}

// inspect runs `lockctl inspect --key K... -o json` against addr.
func inspect(t *testing.T, addr string, keys ...string) []lockJSON {
	t.Helper()
	args := []string{"inspect", "-o", "json"}
	for _, k := range keys {
		args = append(args, "--key", k)
	}
	out := lockctl(t, addr, args...)
	var doc struct {
		Locks []json.RawMessage `json:"locks"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("lockctl %v: %v\n%s", args, err, out)
	}
	var locks []lockJSON
	for _, raw := range doc.Locks {
		var l lockJSON
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("lockctl inspect lock %s: %v", raw, err)
		}
		l.Raw = raw
		locks = append(locks, l)
	}
	return locks
}

// lockctl runs the lockctl binary against addr; exit 1 (a finding at
// --fail-on) is not an error here, anything else is.
func lockctl(t *testing.T, addr string, args ...string) []byte {
	t.Helper()
	out, _ := lockctlExit(t, addr, args...)
	return out
}

// lockctlExit is lockctl that also returns the exit code (0 or 1).
func lockctlExit(t *testing.T, addr string, args ...string) ([]byte, int) {
	t.Helper()
	cmd := exec.Command(bin.lockctl, args...)
	cmd.Env = append(os.Environ(), "LOCKCTL_REDIS_URL=redis://"+addr+"/0", "NO_COLOR=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	ee, ok := err.(*exec.ExitError)
	switch {
	case err == nil:
		return out, 0
	case ok && ee.ExitCode() == 1:
		return out, 1
	}
	t.Fatalf("lockctl %v: %v\n%s", args, err, stderr.String())
	return nil, 0
}

// watcher is a running `lockctl watch -o jsonl`.
type watcher struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

// event is one line of `lockctl watch -o jsonl`.
type event struct {
	Event string `json:"event"`
	Key   string `json:"key"`
	Owner string `json:"owner"`
}

// startWatch samples what follow selects (--key KEY, or --pattern GLOB:
// every key the glob matches, a pass each time) every 50 ms until stop; it
// returns after watch's first event (its first sample), 15 s at most.
func startWatch(t *testing.T, addr string, follow ...string) *watcher {
	t.Helper()
	w := &watcher{done: make(chan struct{})}
	w.cmd = exec.Command(bin.lockctl, append(append([]string{"watch"}, follow...), "--interval", "50ms", "-o", "jsonl")...)
	w.cmd.Env = append(os.Environ(), "LOCKCTL_REDIS_URL=redis://"+addr+"/0")
	stdout, _ := w.cmd.StdoutPipe()
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("lockctl watch: %v", err)
	}
	t.Cleanup(func() { _ = w.cmd.Process.Kill(); <-w.done; _ = w.cmd.Wait() })
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.mu.Unlock()
		}
	}()
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		w.mu.Lock()
		n := len(w.lines)
		w.mu.Unlock()
		if n > 0 {
			return w
		}
	}
	t.Fatalf("lockctl watch printed no first event in 15 s")
	return nil
}

// waitFor waits (10 s at most) until watch has printed an event of kind:
// each step waits for watch to see it, so a slow sampler on a loaded
// machine cannot merge two steps into one (a release and the next acquire
// into a TAKEOVER).
func (w *watcher) waitFor(kind string) bool {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		w.mu.Lock()
		found := slices.ContainsFunc(w.lines, func(l string) bool { return strings.Contains(l, `"event":"`+kind+`"`) })
		w.mu.Unlock()
		if found {
			return true
		}
	}
	return false
}

// stop interrupts watch and returns its events.
func (w *watcher) stop(t *testing.T) []event {
	t.Helper()
	time.Sleep(300 * time.Millisecond) // samples after the last change
	_ = w.cmd.Process.Signal(syscall.SIGINT)
	<-w.done
	var evs []event
	for _, line := range w.lines {
		var e event
		if json.Unmarshal([]byte(line), &e) == nil {
			evs = append(evs, e)
		}
	}
	return evs
}
