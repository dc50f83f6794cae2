package checklist

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Markdown renders the report as GitHub task lists, one heading per task and
// per section: "- [x]" for pass, "- [ ]" for everything else, with the
// status, the spec line and the reason, then why, how to verify and the source.
func (r *Report) Markdown() []byte {
	var b bytes.Buffer
	for i, t := range r.Tasks {
		if i > 0 {
			b.WriteString("\n")
		}
		if t.Spec == "" {
			b.WriteString("# Long-task review\n")
		} else {
			// A heading is one line: a line break in the task's name (or
			// the spec's path) is written as \n.
			fmt.Fprintf(&b, "# Long-task review: %s (`%s`)\n\n", headingBreaks.Replace(mdText(t.Task)), headingBreaks.Replace(t.Spec))
			fmt.Fprintf(&b, "%s\n", summaryLine(tally(t.Items)))
		}
		section := ""
		for _, it := range t.Items {
			if it.Section != section {
				section = it.Section
				fmt.Fprintf(&b, "\n## %s\n\n", section)
			}
			box := " "
			if it.Status == StatusPass {
				box = "x"
			}
			fmt.Fprintf(&b, "- [%s] **%s** %s\n", box, it.ID, mdText(it.Question))
			if t.Spec != "" {
				fmt.Fprintf(&b, "  - **%s** (line %d): %s\n", it.Status, it.Line, mdText(it.Reason))
			}
			fmt.Fprintf(&b, "  - Why: %s\n", mdText(it.Why))
			fmt.Fprintf(&b, "  - Verify: %s\n", mdText(it.Verify))
			fmt.Fprintf(&b, "  - Source: %s\n", mdText(it.Source))
		}
	}
	return b.Bytes()
}

// headingBreaks writes line breaks as \n and \r in a Markdown heading.
var headingBreaks = strings.NewReplacer("\n", `\n`, "\r", `\r`)

// mdText escapes < and > outside code spans, so placeholders such as
// <budget> are not swallowed as HTML tags.
func mdText(s string) string {
	var b strings.Builder
	code := false
	for _, c := range s {
		switch {
		case c == '`':
			code = !code
			b.WriteRune(c)
		case !code && c == '<':
			b.WriteString("&lt;")
		case !code && c == '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

func tally(items []Result) Summary {
	r := Report{Tasks: []TaskReport{{Items: items}}}
	r.Tally()
	return r.Summary
}

// summaryLine is "2 fail, 1 warn, 15 pass, 4 manual".
func summaryLine(s Summary) string {
	return fmt.Sprintf("%d fail, %d warn, %d pass, %d manual", s.Fail, s.Warn, s.Pass, s.Manual)
}

// SummaryLine returns the report's counts as one line: "2 fail, 1 warn, 15 pass, 4 manual".
func (r *Report) SummaryLine() string { return summaryLine(r.Summary) }

// JUnit XML (the schema Jenkins, GitLab and GitHub test reporters read).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	File     string      `xml:"file,attr,omitempty"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Failure   *junitMessage `xml:"failure"`
	Skipped   *junitMessage `xml:"skipped"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnit renders the report as JUnit XML: one testsuite per task, one
// testcase per item (classname = section, name = item id); a failure for
// fail, skipped for manual, and the reason in system-out for warn and pass.
func (r *Report) JUnit() ([]byte, error) {
	root := junitSuites{Name: "lockctl checklist"}
	for _, t := range r.Tasks {
		name := t.Task
		if name == "" {
			name = "checklist"
		}
		s := junitSuite{Name: name, File: t.Spec}
		for _, it := range t.Items {
			c := junitCase{Name: it.ID, Classname: name + "." + it.Section, File: t.Spec, Line: it.Line}
			switch it.Status {
			case StatusFail:
				c.Failure = &junitMessage{Message: it.Reason, Type: "fail", Text: detail(t.Spec, it)}
				s.Failures++
			case StatusManual:
				c.Skipped = &junitMessage{Message: "manual: " + it.Question}
				s.Skipped++
			default:
				c.SystemOut = string(it.Status) + ": " + it.Reason
			}
			s.Cases = append(s.Cases, c)
			s.Tests++
		}
		root.Suites = append(root.Suites, s)
		root.Tests += s.Tests
		root.Failures += s.Failures
		root.Skipped += s.Skipped
	}
	out, err := xml.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(append([]byte(xml.Header), out...), '\n'), nil
}

func detail(spec string, it Result) string {
	loc := ""
	if spec != "" {
		loc = fmt.Sprintf("%s:%d: ", spec, it.Line)
	}
	return fmt.Sprintf("%s%s\nWhy: %s\nVerify: %s\nSource: %s", loc, it.Reason, it.Why, it.Verify, it.Source)
}

// SARIF 2.1.0 (OASIS Static Analysis Results Interchange Format), the
// subset GitHub code scanning reads.
const (
	sarifVersion = "2.1.0"
	sarifSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
)

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string       `json:"id"`
	Name             string       `json:"name"`
	ShortDescription sarifMessage `json:"shortDescription"`
	FullDescription  sarifMessage `json:"fullDescription"`
	Help             sarifHelp    `json:"help"`
	Properties       sarifProps   `json:"properties"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifHelp struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown"`
}

type sarifProps struct {
	Tags []string `json:"tags"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           sarifRegion   `json:"region"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

// InformationURI is the tool's home, named in SARIF output.
const InformationURI = "https://github.com/lockctl/lockctl"

// SARIF renders the report as a SARIF 2.1.0 log: one rule per item (help
// text = why, how to verify, source) and one result per fail (level error)
// or warn (level warning), located at the spec file and line.
func (r *Report) SARIF(toolVersion string) ([]byte, error) {
	run := sarifRun{
		Tool:    sarifTool{Driver: sarifDriver{Name: "lockctl checklist", Version: toolVersion, InformationURI: InformationURI}},
		Results: []sarifResult{},
	}
	index := map[string]int{}
	for i, it := range items {
		index[it.ID] = i
		help := fmt.Sprintf("%s\n\nWhy: %s\nVerify: %s\nSource: %s", it.Question, it.Why, it.Verify, it.Source)
		md := fmt.Sprintf("%s\n\n**Why:** %s\n\n**Verify:** %s\n\n**Source:** %s", mdText(it.Question), mdText(it.Why), mdText(it.Verify), mdText(it.Source))
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{
			ID: it.ID, Name: ruleName(it.ID),
			ShortDescription: sarifMessage{it.Question}, FullDescription: sarifMessage{it.Why},
			Help:       sarifHelp{Text: help, Markdown: md},
			Properties: sarifProps{Tags: []string{"lockctl", it.Section}},
		})
	}
	for _, t := range r.Tasks {
		if t.Spec == "" {
			continue
		}
		for _, it := range t.Items {
			level := map[Status]string{StatusFail: "error", StatusWarn: "warning"}[it.Status]
			if level == "" {
				continue
			}
			run.Results = append(run.Results, sarifResult{
				RuleID: it.ID, RuleIndex: index[it.ID], Level: level,
				Message: sarifMessage{fmt.Sprintf("%s: %s", t.Task, it.Reason)},
				Locations: []sarifLocation{{PhysicalLocation: sarifPhysical{
					ArtifactLocation: sarifArtifact{URI: specURI(t.Spec)},
					Region:           sarifRegion{StartLine: it.Line},
				}}},
			})
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sarifLog{Schema: sarifSchema, Version: sarifVersion, Runs: []sarifRun{run}}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ruleName turns "lock_key.owner-token" into "LockKeyOwnerToken" (SARIF
// rule names are identifiers).
// specURI is a spec path as a SARIF artifactLocation.uri: a relative (or
// absolute) URI reference, slash-separated and percent-encoded ("tasks/a
// b.yaml" → "tasks/a%20b.yaml"; a colon in the first segment gets "./").
func specURI(path string) string {
	return (&url.URL{Path: filepath.ToSlash(path)}).String()
}

func ruleName(id string) string {
	var b strings.Builder
	upper := true
	for _, c := range id {
		if c == '.' || c == '-' || c == '_' {
			upper = true
			continue
		}
		if upper && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		upper = false
		b.WriteRune(c)
	}
	return b.String()
}

// GitHub renders the report as GitHub Actions workflow commands: one
// "::error file=…,line=…,title=…::reason" per fail and "::warning …" per
// warn, then a summary line. Values are escaped as the runner expects
// (% \r \n, and : , in properties).
func (r *Report) GitHub() []byte {
	var b bytes.Buffer
	for _, t := range r.Tasks {
		for _, it := range t.Items {
			cmd := map[Status]string{StatusFail: "error", StatusWarn: "warning"}[it.Status]
			if cmd == "" || t.Spec == "" {
				continue
			}
			fmt.Fprintf(&b, "::%s file=%s,line=%d,title=%s::%s\n", cmd,
				ghProperty(filepath.ToSlash(t.Spec)), it.Line, ghProperty(it.ID), ghData(t.Task+": "+it.Reason))
		}
	}
	fmt.Fprintf(&b, "lockctl checklist: %s\n", r.SummaryLine())
	return b.Bytes()
}

func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func ghProperty(s string) string {
	return strings.NewReplacer(":", "%3A", ",", "%2C").Replace(ghData(s))
}
