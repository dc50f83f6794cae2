package trial

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"strings"
)

// maxArgBytes bounds one command argument the proxy keeps for observing:
// owner tokens and keys are short; a large value is skipped, not buffered.
const maxArgBytes = 4 << 10

var errRESP = errors.New("not a RESP command")

// readCommand reads one client command: a RESP array of bulk strings (what
// every client library and redis-cli send), or an inline command (a line of
// words). Arguments over maxArgBytes come back empty.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, "*") {
		return strings.Fields(line), nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 || n > 1<<20 {
		return nil, errRESP
	}
	args := make([]string, 0, min(n, 64))
	for range n {
		head, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(head, "$") {
			return nil, errRESP
		}
		size, err := strconv.Atoi(strings.TrimRight(head[1:], "\r\n"))
		if err != nil || size < 0 {
			return nil, errRESP
		}
		if size > maxArgBytes {
			if _, err := r.Discard(size + 2); err != nil {
				return nil, err
			}
			args = append(args, "")
			continue
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args = append(args, string(buf[:size]))
	}
	return args, nil
}

// globMatch reports whether s matches Redis's glob pattern (KEYS, SCAN
// MATCH: * ? [abc] [^a] [a-z] and \ escapes; util.c stringmatchlen).
func globMatch(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			s = s[1:]
			pattern = pattern[1:]
			continue
		case '[':
			if s == "" {
				return false
			}
			ok, rest := matchClass(pattern[1:], s[0])
			if !ok {
				return false
			}
			pattern, s = rest, s[1:]
			continue
		case '\\':
			if len(pattern) > 1 {
				pattern = pattern[1:]
			}
		}
		if s == "" || s[0] != pattern[0] {
			return false
		}
		s, pattern = s[1:], pattern[1:]
	}
	return s == ""
}

// matchClass matches c against a [...] class whose text after '[' is p; it
// returns the pattern after the closing ']'.
func matchClass(p string, c byte) (bool, string) {
	not := len(p) > 0 && p[0] == '^'
	if not {
		p = p[1:]
	}
	match := false
	for len(p) > 0 && p[0] != ']' {
		switch {
		case p[0] == '\\' && len(p) > 1:
			match = match || p[1] == c
			p = p[2:]
		case len(p) > 2 && p[1] == '-' && p[2] != ']':
			lo, hi := min(p[0], p[2]), max(p[0], p[2])
			match = match || c >= lo && c <= hi
			p = p[3:]
		default:
			match = match || p[0] == c
			p = p[1:]
		}
	}
	if len(p) > 0 {
		p = p[1:]
	}
	return match != not, p
}
