package cmd

import (
	"io"
	"os"
	"strconv"

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
	// OutWidth is the terminal's width in columns when Out is one (0:
	// unknown or not a terminal); tables and lines are fitted to it.
	OutWidth int
}

// SystemIO returns the process's streams with TTY detection.
func SystemIO() *IOStreams {
	outTTY := isTerminal(os.Stdout)
	width := 0
	if outTTY {
		width = terminalWidth(os.Getenv("COLUMNS"), os.Stdout)
	}
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		OutTTY: outTTY, ErrTTY: isTerminal(os.Stderr), OutWidth: width,
	}
}

// terminalWidth is the width of the terminal f in columns: COLUMNS when it
// is a positive number (a user's override, as ls and git honour it), else
// the terminal's own size (TIOCGWINSZ), else 0 (unknown).
func terminalWidth(columns string, f *os.File) int {
	if n, err := strconv.Atoi(columns); err == nil && n > 0 {
		return n
	}
	if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
		return w
	}
	return 0
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
