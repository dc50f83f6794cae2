package cmd

import (
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams are the streams a command writes to; tests inject buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// OutTTY and ErrTTY say whether Out and ErrOut are terminals: tables get
	// colour and progress bars show only there.
	OutTTY bool
	ErrTTY bool
}

// SystemIO returns the process's streams with TTY detection.
func SystemIO() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		OutTTY: isTerminal(os.Stdout), ErrTTY: isTerminal(os.Stderr),
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// maxInputFile is the most lockctl reads of a config or task spec file, in
// bytes (1 MiB); each is a page of YAML.
const maxInputFile = 1 << 20

// readAtMost reads up to n bytes of path: /dev/zero or a huge file given by
// mistake cannot exhaust memory.
func readAtMost(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
