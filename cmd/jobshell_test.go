//go:build linux

package cmd_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func init() { testCommands["jobshell"] = jobShell }

// jobShell is `jobshell PROG ARGS...`: an interactive shell's job control,
// reduced to one job. Started on a terminal it leads (pty.Start), it runs
// PROG as a foreground job in a group of its own. When the job stops it
// takes the terminal back, says "[jobshell: stopped]" and reads a line:
// "fg" gives the job the terminal and continues it; "bg" continues it in
// the background and the next line ("fg") gives it the terminal without a
// SIGCONT, as bash does for a running job. When the job exits it says
// "[jobshell: exit N]" and reads one more line, to show that the terminal
// came back with nothing lost. `jobshell -bg PROG ARGS...` starts the job
// in the background (PROG &), the shell keeping the terminal.
func jobShell() int {
	args, fg := os.Args[1:], true
	if args[0] == "-bg" {
		args, fg = args[1:], false
	}
	job := exec.Command(args[0], args[1:]...)
	job.Stdin, job.Stdout, job.Stderr = os.Stdin, os.Stdout, os.Stderr
	job.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Foreground: fg, Ctty: 0}
	if err := job.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "jobshell:", err)
		return 127
	}
	signal.Ignore(syscall.SIGTTOU) // a shell takes its terminal back from the background
	pid := job.Process.Pid
	fmt.Printf("[jobshell: job %d]\n", pid)
	in := bufio.NewReader(os.Stdin)
	readLine := func() string {
		l, _ := in.ReadString('\n')
		return strings.TrimSpace(l)
	}
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil); err != nil {
			fmt.Fprintln(os.Stderr, "jobshell:", err)
			return 1
		}
		_ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp())
		if ws.Stopped() {
			fmt.Printf("[jobshell: stopped]\n")
			if readLine() == "bg" {
				_ = syscall.Kill(-pid, syscall.SIGCONT)
				readLine() // fg
				_ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, pid)
				continue
			}
			_ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, pid)
			_ = syscall.Kill(-pid, syscall.SIGCONT)
			continue
		}
		code := ws.ExitStatus()
		if ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		fmt.Printf("[jobshell: exit %d]\n", code)
		fmt.Printf("[jobshell: read %q]\n", readLine())
		return code
	}
}
