package cmd

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/lockctl/lockctl/history"
)

// The JUnit printer of `-o junit` for runs (simulate and trial): one test
// case per run, failed unless its verdict is safe. checklist's JUnit
// (checklist/format.go) has a suite per task and a case per item, with
// files, lines and skipped manual items: another shape.

// junitRun is one run as a test case: its name, how long it took (ms), its
// verdict and how many violations it had; Found are those to show in the
// failure's text (nil when the run is only summed up).
type junitRun struct {
	Name       string
	DurationMS int64
	Verdict    string
	Violations int
	Found      []history.Violation
}

// writeJUnit writes runs as one JUnit testsuite called suite, each case of
// class classname: an unsafe run fails with its violations as the text, an
// inconclusive one fails too (no evidence is never a pass).
func writeJUnit(w io.Writer, suite, classname string, runs []junitRun) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
	}
	type testsuite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	s := testsuite{Name: suite, Tests: len(runs)}
	for _, r := range runs {
		c := testcase{Name: r.Name, Classname: classname, Time: fmt.Sprintf("%.3f", float64(r.DurationMS)/1000)}
		switch r.Verdict {
		case history.VerdictInconclusive:
			c.Failure = &failure{Message: "inconclusive: nothing was seen to judge", Type: "inconclusive"}
		case history.VerdictUnsafe:
			var b strings.Builder
			for _, v := range r.Found {
				fmt.Fprintf(&b, "%s at %s (%s): %s\n", v.Code, fmtMS(v.AtMS), cmp.Or(v.Actor, "-"), v.Detail)
			}
			c.Failure = &failure{Message: fmt.Sprintf("unsafe: %d violations", r.Violations), Type: "unsafe", Text: b.String()}
		}
		if c.Failure != nil {
			s.Failures++
		}
		s.Cases = append(s.Cases, c)
	}
	if _, err := fmt.Fprint(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}
