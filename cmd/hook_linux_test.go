package cmd

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// LOCKCTL_TEST_STOP_AFTER_FORK=1 makes the test binary, run as lockctl,
// SIGSTOP itself between its child's start and the watchdog's watch line
// (TestRunStoppedAfterFork): the window a frozen lockctl leaves. The
// signal goes to this very thread: sent to the process, another thread
// could take it while this one wrote the watch line.
func init() {
	if os.Getenv("LOCKCTL_TEST_STOP_AFTER_FORK") == "1" {
		afterChildStart = func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP)
		}
	}
}
