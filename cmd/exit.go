package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
)

// Exit codes, documented in docs/exit-codes.md. They are decided in one
// place, Execute, from typed errors.
const (
	ExitOK          = 0
	ExitCheckFailed = 1   // a check found a problem (checklist, --expect, --fail-on)
	ExitUsage       = 2   // usage or input error
	ExitRedis       = 3   // cannot reach Redis, auth refused, or timed out
	ExitHangup      = 129 // SIGHUP (128 + 1): the terminal went away
	ExitInterrupted = 130 // Ctrl-C / SIGINT (128 + 2, as a shell reports it)
	ExitQuit        = 131 // Ctrl-\ / SIGQUIT (128 + 3)
	ExitTerminated  = 143 // SIGTERM (128 + 15)

	// `lockctl run` only; on a normal exit run passes the child's own code
	// through (128+N when a signal N ended it).
	ExitNotObtained = 75  // the lock is held by another owner (sysexits EX_TEMPFAIL: try again later)
	ExitLeaseLost   = 76  // the lease was lost while the child ran; the child was stopped
	ExitBudget      = 124 // the budget (or the renewal bound) ended; the child was stopped (as timeout(1))
	ExitCannotRun   = 127 // the command was not found or could not be started (as sh, env, timeout)
)

// ExitError carries an exit code with the one-line error to print. A nil Err
// means "exit with Code, print nothing" (the command already said why).
type ExitError struct {
	Code int
	Err  error
	// Hint is an optional second line ("Run 'lockctl lease --help' for usage.").
	Hint string
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// usageErrorf is an input error: exit 2.
func usageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// checkFailed exits 1 without printing anything more: the report said why.
func checkFailed() error { return &ExitError{Code: ExitCheckFailed} }

// redisError wraps an error talking to the server at a (redacted) URL: exit
// 3, or a *clusterModeError's own code.
func redisError(redactedURL string, err error) error {
	code := ExitRedis
	var ce *clusterModeError
	if errors.As(err, &ce) { // the server is not the kind the settings name
		code = ce.Code
	}
	return &ExitError{Code: code, Err: fmt.Errorf("redis %s: %w", redactedURL, err)}
}

// isConnectionError reports whether err comes from the network or the
// server refusing us (auth, timeouts), rather than from a bad reply.
func isConnectionError(err error) bool {
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &ne), errors.As(err, &oe),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return true
	}
	msg := err.Error()
	for _, p := range []string{"NOAUTH", "WRONGPASS", "NOPERM", "invalid password", "connection pool timeout", "i/o timeout", "LOADING", "MASTERDOWN", "CLUSTERDOWN", "tls:", "x509:", "redis: client is closed"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// exitCode decides the process's exit code from err.
func exitCode(err error) int {
	var ee *ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
	return ExitUsage
}
