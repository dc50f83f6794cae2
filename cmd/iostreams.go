package cmd

import (
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

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
	// Env is the environment lockctl reads (LOCKCTL_*, REDISCLI_AUTH,
	// NO_COLOR, HOME, XDG_CONFIG_HOME, ...) and run's child inherits, as
	// KEY=VALUE strings; nil is the process's own. Tests give their own
	// instead of changing the process's, so they can run in parallel.
	Env []string
}

// getenv is variable k of Env (the last one wins, as in exec.Cmd.Env), or
// of the process when Env is nil; "" when unset.
func (io *IOStreams) getenv(k string) string {
	if io.Env == nil {
		return os.Getenv(k)
	}
	val := ""
	for _, kv := range io.Env {
		if name, v, ok := strings.Cut(kv, "="); ok && name == k {
			val = v
		}
	}
	return val
}

// unsetenv removes variable k from Env, or from the process's environment
// when Env is nil.
func (io *IOStreams) unsetenv(k string) {
	if io.Env == nil {
		_ = os.Unsetenv(k)
		return
	}
	io.Env = slices.DeleteFunc(slices.Clone(io.Env), func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
}

// environ is Env, or the process's environment when Env is nil.
func (io *IOStreams) environ() []string {
	if io.Env == nil {
		return os.Environ()
	}
	return io.Env
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

// readInputFile reads up to n bytes of a file the user named (--config,
// --spec, --file, --tls-ca, --tls-cert, --tls-key): /dev/zero or a huge file
// given by mistake cannot exhaust memory, and a FIFO, socket or device, which
// would block or never end, is refused. what names the file in the error.
// Errors: a usage error (exit 2) naming what and path for anything but a
// readable regular file; it wraps the *os.PathError's cause (fs.ErrNotExist…).
func readInputFile(what, path string, n int64) ([]byte, error) {
	fi, err := os.Stat(path) // follows symlinks: a link to a regular file is fine
	if err != nil {
		return nil, usageErrorf("%s %q: %w", what, path, unwrapPathError(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(what, path, fi.Mode())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usageErrorf("%s %q: %w", what, path, unwrapPathError(err))
	}
	defer f.Close()
	// The path may have been replaced between Stat and Open.
	if fi, err = f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, notRegular(what, path, fi.Mode())
	}
	data, err := io.ReadAll(io.LimitReader(f, n))
	if err != nil {
		return nil, usageErrorf("%s %q: %w", what, path, unwrapPathError(err))
	}
	return data, nil
}

// notRegular is the one-line refusal of a path that is not a regular file.
func notRegular(what, path string, m fs.FileMode) error {
	kind := "not a regular file"
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	}
	return usageErrorf("%s %q is %s; give a regular file", what, path, kind)
}
