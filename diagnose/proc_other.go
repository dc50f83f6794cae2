//go:build !linux

package diagnose

import (
	"errors"
	"net/netip"
	"time"
)

// procNote says what cannot be read without Linux's /proc.
const procNote = "this system has no Linux /proc: the processes' states, threads, wait channels, syscalls, TCP connections and lockctl run environment cannot be read; only the Redis side is shown"

// procReader reads nothing here; readProcesses stops at procNote first.
type procReader struct{}

func newProcReader(time.Time) *procReader { return &procReader{} }

var errNoProc = errors.New(procNote)

func (*procReader) process(int) (Process, error) { return Process{}, errNoProc }

func childrenOf(int) []int { return nil }

func runChildrenFor(string) []int { return nil }

func socketOwners() (map[[2]netip.AddrPort]int, int) { return nil, 0 }
