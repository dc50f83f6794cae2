package cmd_test

import (
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/internal/golden"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/rogpeppe/go-internal/testscript"
)

// testCommands are the commands the tests run as programs (the test binary
// under another name).
var testCommands = map[string]func() int{}

func TestMain(m *testing.M) {
	testCommands["lockctl"] = func() int { return cmd.Execute(os.Args[1:], cmd.SystemIO()) }
	// The parallel tests mostly wait on their servers and child processes,
	// not the CPU: 2 per core by default (-parallel, given, still wins: the
	// command line is parsed after this). Tests with timing limits (the
	// freeze tests, TestRunWatchdogEnds, TestCompletionSilentServer) stay
	// serial: 8 at once starved them on a loaded machine (load 20).
	_ = flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	if testCommands[filepath.Base(os.Args[0])] == nil {
		restoreSignalsForChildren()
	}
	commands := map[string]func(){}
	for name, run := range testCommands {
		commands[name] = func() { os.Exit(run()) }
	}
	testscript.Main(removeReleased{m}, commands) // exits: never returns here
}

// removeReleased runs the tests, then removes the released build's
// directory (releasedLockctl): testscript.Main exits without returning to
// TestMain, so a removal after it never ran and left 35 MB in $TMPDIR.
type removeReleased struct{ *testing.M }

func (r removeReleased) Run() int {
	code := r.M.Run()
	if released.dir != "" {
		_ = os.RemoveAll(released.dir)
	}
	return code
}

// restoreSignalsForChildren gives the processes the tests start SIGHUP,
// SIGINT and SIGQUIT at their defaults when go test itself was started with
// them ignored (nohup; a script's background job), which every child would
// inherit: the tests of what lockctl does with those signals assume the
// default and set up an ignored one themselves (TestRunKeepsIgnoredSignals).
// A handler, unlike SIG_IGN, is reset by exec; the signals it catches are
// dropped, so the test process still ignores them in effect.
func restoreSignalsForChildren() {
	var ignored []os.Signal
	for _, s := range []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT} {
		if signal.Ignored(s) {
			ignored = append(ignored, s)
		}
	}
	if len(ignored) > 0 {
		signal.Notify(make(chan os.Signal, 1), ignored...)
	}
}

// TestScripts runs testdata/script/*.txtar against the lockctl binary.
// `start-redis` starts a real redis-server on a free port for the script and
// sets REDIS_URL, REDIS_ADDR and LOCKCTL_REDIS_URL; `-update` rewrites the
// scripts' cmp files.
func TestScripts(t *testing.T) {
	t.Parallel()
	trialWorkers, err := filepath.Abs("../testdata/trial")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: golden.Updating(),
		Setup: func(env *testscript.Env) error {
			// No developer's config or colour settings leak in.
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("XDG_CONFIG_HOME", env.WorkDir+"/.config")
			env.Setenv("NO_COLOR", "1")
			env.Setenv("TRIAL_WORKERS", trialWorkers) // the shell workers the docs and scripts share
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"start-redis": startRedis,
		},
	})
}

func startRedis(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! start-redis")
	}
	s, err := redistest.Launch(args...)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	ts.Defer(s.Stop)
	ts.Setenv("REDIS_ADDR", s.Addr)
	ts.Setenv("REDIS_PORT", strconv.Itoa(s.Port))
	ts.Setenv("REDIS_URL", s.URL())
	ts.Setenv("LOCKCTL_REDIS_URL", s.URL())
}
