//go:build !linux

package supervise

import (
	"io"
	"os"
	"os/exec"
	"syscall"
)

// jobControl does nothing outside Linux: the child runs in its own process
// group (where there are groups) and lockctl neither hands it the terminal
// nor stops with it.
type jobControl struct{}

func newJobControl(io.Reader, io.Writer) *jobControl           { return &jobControl{} }
func (*jobControl) procAttr() *syscall.SysProcAttr             { return GroupAttr() }
func (*jobControl) signals() []os.Signal                       { return nil }
func (*jobControl) childSignals() []os.Signal                  { return nil }
func (*jobControl) started()                                   {}
func (*jobControl) start(c *exec.Cmd) error                    { return c.Start() }
func (*jobControl) signal(os.Signal, *os.Process) (bool, bool) { return false, false }
func (*jobControl) resume(*os.Process)                         {}
func (*jobControl) takeTerminal(*os.Process)                   {}
