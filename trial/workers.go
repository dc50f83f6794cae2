package trial

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/contain"
)

// StartError: the command cannot be started at all (not found, not
// executable); lockctl exits 127 as sh does.
type StartError struct {
	Command string
	Err     error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("cannot start worker %q: %v", e.Command, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// Worker restart pacing: a worker that keeps exiting at once is started
// again after restartMin, doubling up to restartMax.
const (
	restartMin = 50 * time.Millisecond
	restartMax = time.Second
	// quickExit is how soon an exit counts as "at once".
	quickExit = 500 * time.Millisecond
	tailLines = 5
	maxExits  = 20
)

// worker is one slot of the trial: COMMAND started again each time it exits,
// in a tree of its own (internal/contain: its cgroup, or every process it
// started), until the trial stops it.
type worker struct {
	id   int
	t    *trial
	env  []string
	tree *contain.Tree

	mu       sync.Mutex
	running  bool
	paused   bool
	stopping bool
	report   WorkerReport
	tail     []string
	done     chan struct{}
}

// loop starts the worker again and again until stop; it closes w.done.
func (w *worker) loop() {
	defer close(w.done)
	backoff := restartMin
	for {
		w.mu.Lock()
		if w.stopping {
			w.mu.Unlock()
			return
		}
		c := exec.Command(w.t.opts.Command[0], w.t.opts.Command[1:]...)
		c.Env, c.Dir = slices.Clip(w.env), w.t.opts.Dir
		c.Stdout = &lineWriter{line: w.stdoutLine}
		c.Stderr = &lineWriter{line: w.stderrLine}
		c.WaitDelay = time.Second // a helper that kept stdout open does not hold the restart
		err := w.tree.Start(c)
		if err != nil {
			w.mu.Unlock()
			w.exited(fmt.Sprintf("start: %v", err))
		} else {
			w.running = true
			w.report.Starts++
			w.mu.Unlock()
			started := time.Now()
			werr := c.Wait()
			// Helpers it left, in any session, must not outlive it into the next start.
			w.tree.Exited()
			w.tree.Kill()
			w.mu.Lock()
			w.running, w.paused = false, false
			w.mu.Unlock()
			w.exited(exitText(c.ProcessState, werr))
			if time.Since(started) > quickExit {
				backoff = restartMin
			}
		}
		w.mu.Lock()
		stopping := w.stopping
		w.mu.Unlock()
		if stopping {
			return
		}
		w.t.lanes.set(w.id, laneDown, true)
		select {
		case <-w.t.stopCh:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, restartMax)
		w.t.lanes.set(w.id, laneDown, false)
	}
}

func (w *worker) exited(how string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if strings.HasPrefix(how, "exit status ") && how != "exit status 0" || strings.HasPrefix(how, "start: ") {
		w.report.Failures++
	}
	if len(w.report.Exits) < maxExits {
		w.report.Exits = append(w.report.Exits, how)
	}
}

func exitText(ps *os.ProcessState, err error) string {
	if ps == nil {
		return err.Error()
	}
	return ps.String() // "exit status 1", "signal: killed"
}

// pause stops the worker's whole tree; false when it is not running or
// cannot be stopped.
func (w *worker) pause() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.running || w.tree.Pause() != nil {
		return false
	}
	w.paused = true
	return true
}

// resume continues the worker's tree after pause.
func (w *worker) resume() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.paused {
		_ = w.tree.Continue()
		w.paused = false
	}
}

// kill kills the worker's whole tree; false when it is not running.
func (w *worker) kill() bool {
	w.mu.Lock()
	running := w.running
	w.mu.Unlock()
	if running {
		w.tree.Kill()
	}
	return running
}

// stop ends the slot: SIGCONT and SIGTERM to the whole tree, SIGKILL to
// all of it after grace.
func (w *worker) stop(grace time.Duration) {
	w.mu.Lock()
	w.stopping, w.paused = true, false
	w.mu.Unlock()
	w.tree.Terminate()
	select {
	case <-w.done:
		return
	case <-time.After(grace):
	}
	w.tree.Kill()
	<-w.done
}

// stdoutLine takes one line of the worker's stdout: an operation for the
// history, else a line passed over (counted when it looked like JSON).
func (w *worker) stdoutLine(line string) {
	op, ok := parseOp(line)
	kept := ok && w.t.addOp(w.id, op)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case kept:
		w.report.Ops++
	case ok:
		w.report.DroppedOps++
	case strings.HasPrefix(strings.TrimSpace(line), "{"):
		w.report.BadLines++
	}
}

func (w *worker) stderrLine(line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tail = append(w.tail, line)
	if len(w.tail) > tailLines {
		w.tail = w.tail[1:]
	}
}

// snapshot is the worker's report at the end.
func (w *worker) snapshot() WorkerReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.report
	r.Worker = w.id
	r.LastErrs = append([]string(nil), w.tail...)
	if r.Exits == nil {
		r.Exits = []string{}
	}
	return r
}

// workerEnv is base plus the trial's variables (docs/trial.md,
// "Environment"), each replacing one of the same name in base. An
// inherited DATABASE_URL is dropped without --store: workers under faults
// must never write to a real database named in lockctl's environment.
func workerEnv(base []string, id int, seed uint64, redisURL, dbURL string) []string {
	set := map[string]string{"REDIS_URL": redisURL, "LOCKCTL_TRIAL_WORKER": strconv.Itoa(id), "LOCKCTL_TRIAL_SEED": strconv.FormatUint(seed, 10)}
	if dbURL != "" {
		set["DATABASE_URL"] = dbURL
	}
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		name, _, _ := bytes.Cut([]byte(kv), []byte("="))
		if _, ok := set[string(name)]; !ok && string(name) != "DATABASE_URL" {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"REDIS_URL", "LOCKCTL_TRIAL_WORKER", "LOCKCTL_TRIAL_SEED", "DATABASE_URL"} {
		if v, ok := set[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// lineWriter calls line for each line written (without its newline); a
// line over 64 KiB is cut.
type lineWriter struct {
	buf  []byte
	line func(string)
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 64<<10 {
		l.line(string(l.buf))
		l.buf = nil
	}
	return len(p), nil
}
