package inspect

import (
	"regexp/syntax"
	"unicode/utf8"
)

// byteBounds are the shortest and longest input, in bytes, an expression
// can match whole (max -1: unbounded): a value outside them is no match
// without running the expression, which a scan does for every string key
// and every layout whose key glob is "*".
type byteBounds struct{ min, max int }

// fits reports whether n bytes can match.
func (b byteBounds) fits(n int) bool { return n >= b.min && (b.max < 0 || n <= b.max) }

// boundsOf parses expr (checked already) and returns its byteBounds; an
// expression it cannot parse gets no bounds (0, -1).
func boundsOf(expr string) byteBounds {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return byteBounds{0, -1}
	}
	lo, hi := lengthRange(re)
	return byteBounds{lo, hi}
}

// lengthRange is the least and most bytes re matches (-1: no most). A
// character class matches one rune: 1 byte when every rune in it is ASCII,
// else 1 to utf8.UTFMax (an invalid byte matches as U+FFFD, one byte).
func lengthRange(re *syntax.Regexp) (int, int) {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += utf8.RuneLen(r)
		}
		if re.Flags&syntax.FoldCase != 0 {
			return len(re.Rune), len(re.Rune) * utf8.UTFMax
		}
		return n, n
	case syntax.OpCharClass:
		for i := 1; i < len(re.Rune); i += 2 {
			if re.Rune[i] >= utf8.RuneSelf {
				return 1, utf8.UTFMax
			}
		}
		return 1, 1
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1, utf8.UTFMax
	case syntax.OpCapture:
		return lengthRange(re.Sub[0])
	case syntax.OpConcat:
		lo, hi := 0, 0
		for _, s := range re.Sub {
			l, h := lengthRange(s)
			lo += l
			hi = addMax(hi, h)
		}
		return lo, hi
	case syntax.OpAlternate:
		lo, hi := -1, 0
		for _, s := range re.Sub {
			l, h := lengthRange(s)
			if lo < 0 || l < lo {
				lo = l
			}
			if hi >= 0 && (h < 0 || h > hi) {
				hi = h
			}
		}
		return max(lo, 0), hi
	case syntax.OpStar:
		return 0, -1
	case syntax.OpPlus:
		l, _ := lengthRange(re.Sub[0])
		return l, -1
	case syntax.OpQuest:
		_, h := lengthRange(re.Sub[0])
		return 0, h
	case syntax.OpRepeat:
		l, h := lengthRange(re.Sub[0])
		if re.Max < 0 || h < 0 {
			return l * re.Min, -1
		}
		return l * re.Min, h * re.Max
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0, 0
	}
	return 0, -1 // OpNoMatch and anything new: no bound
}

// addMax adds two maxima, -1 (unbounded) absorbing.
func addMax(a, b int) int {
	if a < 0 || b < 0 {
		return -1
	}
	return a + b
}
