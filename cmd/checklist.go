package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/checklist"
	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/spf13/cobra"
)

// Output formats `lockctl checklist` adds to table, json and yaml.
const (
	formatMarkdown = "markdown"
	formatJUnit    = "junit"
	formatSARIF    = "sarif"
	formatGitHub   = "github"
)

var checklistFormats = []string{formatTable, formatJSON, formatYAML, formatMarkdown, formatJUnit, formatSARIF, formatGitHub}

// ChecklistOptions are the inputs of `lockctl checklist`.
type ChecklistOptions struct {
	IO      *IOStreams
	Printer *Printer
	Format  string
	Policy  lockcore.Policy
	// Specs are the spec files, globs expanded, in the order given.
	Specs []string
	// FailOn is the status at or above which the command exits 1.
	FailOn checklist.Status
	// Value is the lock field's value whose live keys --redis reads; "" = no live check.
	Value string
	// Redis connects for the live cross-check.
	Redis func(context.Context) (*RedisConn, error)
	Ctx   context.Context
	// Evidence are `lockctl trial -o json` result files that answer the
	// items a trial can observe.
	Evidence []string
}

// maxEvidenceFile bounds one trial result (its timeline and lanes included).
const maxEvidenceFile = 64 << 20

// NewCmdChecklist returns `lockctl checklist` with `init` and `schema`;
// runF replaces the run function in tests.
func NewCmdChecklist(f *Factory, runF func(*ChecklistOptions) error) *cobra.Command {
	var specs, evidence []string
	var failOn, value string
	cmd := &cobra.Command{
		Use:         "checklist [--spec FILE|GLOB...]",
		Annotations: outputFormats(checklistFormats),
		Short:       "Review a long task's design: the checklist, or a spec as a CI gate",
		Long: `Review one long task from its entry to its last side effect, in the order
of the task's life: identity, lock_key, lease, cancellation, commit_check,
recovery. Each item has a stable id, the question, why it matters, how to
verify it (a lockctl command, a query or an experiment) and its source.

Without --spec, print the checklist (every item "manual"); -o markdown gives a
GitHub task list to paste into a pull request.

With --spec (several files or globs), evaluate each declared task: every item
becomes pass, warn, fail or manual, with the reason and the spec line. Specs
are validated against the JSON Schema (lockctl checklist schema); errors name
file:line and exit 2. Thresholds come from the lease policy, so --lease-cap,
--renew-bound, --renew-every and the policy.* config keys change them.

With --evidence (one or more results of lockctl trial -o json), the items a
trial observes are answered by what it observed rather than by the spec:
commit_check.boundary-refuses (pause faults: a stale write refused),
cancellation.on-lease-loss (partition and expire faults) and
recovery.idempotency-key (kill and partition faults: no ` + history.CodeDuplicate + `):
fail with the first counterexample's seed, pass with the trial that showed
it; the report lists the items that still rest on the spec's word.

With --value (and --redis), compare each spec with the live keys of that value,
read-only (PTTL, EXISTS, GET): a claimed fence counter whose key does not
exist, or a live PTTL above the spec's lease, fails with what was observed.

Formats (-o): table, json, yaml, markdown (GitHub task list), junit (JUnit
XML), sarif (SARIF 2.1.0, for code scanning), github (workflow annotations).

Exit codes: 1 when an item is at or above --fail-on, 2 for spec errors, 3 when
Redis cannot be reached. Never writes to Redis.`,
		Example: `  lockctl checklist -o markdown
  lockctl checklist init tasks/order-import.yaml
  lockctl checklist --spec tasks/order-import.yaml
  lockctl checklist --spec 'tasks/*.yaml' -o sarif > checklist.sarif
  lockctl checklist --spec 'tasks/*.yaml' -o github --fail-on warn
  lockctl checklist --spec tasks/order-import.yaml \
    --redis redis://localhost:6379/0 --value order-demo-001
  lockctl checklist --spec tasks/order-import.yaml --evidence trial.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := f.Output(checklistFormats...)
			if err != nil {
				return err
			}
			if err := emptyFlags(cmd, "value"); err != nil {
				return err
			}
			if cmd.Flags().Changed("spec") && len(specs) == 0 { // --spec "$UNSET" would pass CI on the questionnaire
				return emptyFlagError("spec")
			}
			opts := &ChecklistOptions{IO: f.IO, Printer: f.newPrinter(format), Format: format, Redis: f.Redis, Ctx: cmd.Context(), Value: value, Evidence: evidence}
			if opts.Policy, err = f.policySetting(); err != nil {
				return err
			}
			atWarn, err := failOnLevel(failOn, "fail", "warn")
			if err != nil {
				return err
			}
			opts.FailOn = checklist.StatusFail
			if atWarn {
				opts.FailOn = checklist.StatusWarn
			}
			if opts.Specs, err = expandSpecs(specs); err != nil {
				return err
			}
			switch {
			case len(evidence) > 0 && len(opts.Specs) == 0:
				return usageErrorf("--evidence needs --spec: trial results answer items of a task spec")
			case value != "" && len(opts.Specs) == 0:
				return usageErrorf("--value needs --spec: the live cross-check compares a spec with the keys of that value")
			case cmd.Flags().Changed("redis") && value == "":
				return usageErrorf("--redis needs --value, the lock field's value whose keys to read (e.g. --value order-demo-001)")
			}
			if runF != nil {
				return runF(opts)
			}
			return checklistRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&specs, "spec", nil, `task spec file(s) or glob(s), repeatable or comma-separated: tasks/*.yaml (a path with a comma goes in double quotes: --spec '"a,b.yaml"')`)
	fl.StringVar(&failOn, "fail-on", "fail", "exit 1 when an item is at this status or worse: fail or warn ("+failOnAliases+")")
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"fail", "warn"}, cobra.ShellCompDirectiveNoFileComp))
	fl.StringSliceVar(&evidence, "evidence", nil, "lockctl trial -o json result file(s) answering the items a trial observes (repeatable)")
	fl.StringVar(&value, "value", "", "with --redis: the lock field's value whose live keys to compare with each spec")
	addPolicyFlags(cmd)
	cmd.AddCommand(newCmdChecklistInit(f), newCmdChecklistSchema(f))
	return cmd
}

// expandSpecs expands globs (a pattern matching nothing is an error; a
// file of that very name is taken as it is) and drops repeats, keeping the
// order given.
func expandSpecs(raw []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, s := range raw {
		paths := []string{s}
		if _, err := os.Stat(s); err != nil && strings.ContainsAny(s, "*?[") {
			m, err := filepath.Glob(s)
			if err != nil {
				return nil, usageErrorf("--spec %q is not a valid glob: %v", s, err)
			}
			if len(m) == 0 {
				return nil, usageErrorf("--spec %q matches no file", s)
			}
			paths = m
		}
		for _, p := range paths {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// specHint is the second line of a spec error.
const specHint = "The spec format: lockctl checklist schema, or lockctl checklist init for a commented template."

// loadSpecs reads and validates every spec; all schema errors of all files
// are reported (one line each on stderr) before exiting 2.
func loadSpecs(paths []string, errOut io.Writer) ([]*checklist.Spec, error) {
	var specs []*checklist.Spec
	var all checklist.SpecErrors
	for _, p := range paths {
		data, err := readInputFile("spec", p, maxInputFile+1)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usageErrorf("spec %q does not exist", p)
		}
		if err != nil {
			return nil, err
		}
		if len(data) > maxInputFile {
			return nil, usageErrorf("spec %q is over %d bytes; a task spec is a page of YAML", p, maxInputFile)
		}
		s, err := checklist.ParseSpec(p, data)
		var se checklist.SpecErrors
		switch {
		case errors.As(err, &se):
			all = append(all, se...)
		case err != nil:
			return nil, err
		default:
			specs = append(specs, s)
		}
	}
	switch len(all) {
	case 0:
		return specs, nil
	case 1:
		return nil, &ExitError{Code: ExitUsage, Err: all[0], Hint: specHint}
	}
	for _, e := range all {
		fmt.Fprintln(errOut, e.Error())
	}
	return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("%d errors in the spec files above", len(all)), Hint: specHint}
}

func checklistRun(opts *ChecklistOptions) error {
	report := checklist.Blank()
	if len(opts.Specs) > 0 {
		specs, err := loadSpecs(opts.Specs, opts.IO.ErrOut)
		if err != nil {
			return err
		}
		eo := checklist.Options{Policy: opts.Policy}
		if report, err = checklist.Evaluate(specs, eo); err != nil {
			return usageErrorf("%v", err)
		}
		if opts.Value != "" {
			if err := crossCheck(opts, report, specs, eo); err != nil {
				return err
			}
		}
		if len(opts.Evidence) > 0 {
			trials, err := loadEvidence(opts.Evidence)
			if err != nil {
				return err
			}
			checklist.ApplyEvidence(report, trials)
		}
	}
	if err := renderChecklist(opts, report); err != nil {
		return err
	}
	if report.Failed(opts.FailOn) {
		return checkFailed()
	}
	return nil
}

// loadEvidence reads each trial result (exit 2 when one is missing, too big
// or not a trial result).
func loadEvidence(paths []string) ([]*checklist.Trial, error) {
	trials := make([]*checklist.Trial, 0, len(paths))
	for _, p := range paths {
		data, err := readInputFile("evidence", p, maxEvidenceFile+1)
		if err != nil {
			return nil, err
		}
		if len(data) > maxEvidenceFile {
			return nil, usageErrorf("evidence %q is over %d bytes", p, maxEvidenceFile)
		}
		t, err := checklist.ParseTrial(p, data)
		if err != nil {
			return nil, usageErrorf("%v", err)
		}
		trials = append(trials, t)
	}
	return trials, nil
}

func crossCheck(opts *ChecklistOptions, report *checklist.Report, specs []*checklist.Spec, eo checklist.Options) error {
	conn, err := opts.Redis(opts.Ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	eo.Cluster = conn.Cluster
	// Each call is bounded by the client's --timeout.
	if err := checklist.CrossCheck(opts.Ctx, conn.Client, report, specs, opts.Value, eo); err != nil {
		if opts.Ctx.Err() != nil {
			return opts.Ctx.Err()
		}
		if errors.Is(err, lockcore.ErrCrossSlot) {
			return usageErrorf("%v", err)
		}
		return redisError(conn.URL, err)
	}
	return nil
}

func renderChecklist(opts *ChecklistOptions, r *checklist.Report) error {
	out := opts.IO.Out
	var data []byte
	var err error
	switch opts.Format {
	case formatMarkdown:
		data = r.Markdown()
	case formatJUnit:
		data, err = r.JUnit()
	case formatSARIF:
		data, err = r.SARIF(version)
	case formatGitHub:
		data = r.GitHub()
	default:
		return opts.Printer.Print(r, func(t *TableView) { checklistTable(t, r) })
	}
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	return err
}

func checklistTable(t *TableView, r *checklist.Report) {
	st := t.Styles()
	for i, task := range r.Tasks {
		if i > 0 {
			t.Line("")
		}
		if task.Spec == "" {
			t.Title("Long-task review (no spec: every item is a question to answer by hand)")
		} else {
			t.Title(fmt.Sprintf("%s (%s)", oneLineText(task.Task), oneLineText(task.Spec)))
		}
		header, rows := checklistRows(task, st)
		t.Table(header, rows)
		if o := task.Live; o != nil {
			fence := "does not exist"
			if o.FenceExists {
				fence = "= " + o.Fence
			}
			t.Line("live %s: %s %s; fence %s %s", o.Value, o.LockKey, checklist.PTTLText(o.PTTLMS), o.FenceKey, fence)
		}
	}
	if e := r.Evidence; e != nil {
		t.Line("")
		set := "nothing"
		if len(e.Set) > 0 {
			set = strings.Join(e.Set, ", ")
		}
		t.Line("evidence %s answered: %s", strings.Join(e.Files, ", "), set)
		if len(e.OnSpecWord) > 0 {
			t.Line("still on the spec's word: %s", strings.Join(e.OnSpecWord, ", "))
		}
	}
	t.Line("")
	t.Line("%s", r.SummaryLine())
}

// checklistRows is the pure row builder of the checklist table: with a spec,
// item, status, spec line and reason; without one, item, question and how to verify.
func checklistRows(task checklist.TaskReport, st *Styles) ([]string, [][]string) {
	rows := make([][]string, 0, len(task.Items))
	if task.Spec == "" {
		for _, it := range task.Items {
			rows = append(rows, []string{it.ID, it.Question, it.Verify})
		}
		return []string{"item", "question", "verify"}, rows
	}
	for _, it := range task.Items {
		rows = append(rows, []string{it.ID, st.Level(string(it.Status)), strconv.Itoa(it.Line), it.Reason})
	}
	return []string{"item", "status", "line", "reason"}, rows
}

// defaultSpecFile is where `checklist init` writes without an argument.
const defaultSpecFile = "lockctl-task.yaml"

func newCmdChecklistInit(f *Factory) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a commented task spec (" + defaultSpecFile + "; - for stdout)",
		Long: `Write a commented task spec to FILE (default ` + defaultSpecFile + `, "-" for
stdout). The template passes every rule under the default policy; edit it to
describe your task. An existing file is kept unless --force is given.`,
		Example: `  lockctl checklist init tasks/order-import.yaml
  lockctl checklist init - > task.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			path := defaultSpecFile
			if len(args) == 1 {
				path = args[0]
			}
			return checklistInit(f.IO, path, force)
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite FILE if it exists")
	return cmd
}

func checklistInit(io *IOStreams, path string, force bool) error {
	tmpl := checklist.Template()
	if path == "-" {
		_, err := io.Out.Write(tmpl)
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return usageErrorf("cannot create %q: %v", dir, errors.Unwrap(err))
		}
	}
	file, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return usageErrorf("%q already exists; use --force to overwrite it", path)
	}
	if err != nil {
		return usageErrorf("cannot write %q: %v", path, errors.Unwrap(err))
	}
	if _, err := file.Write(tmpl); err != nil {
		file.Close()
		return err
	}
	if err := file.Close(); err != nil {
		return err
	}
	fmt.Fprintf(io.ErrOut, "wrote %s; check it with: lockctl checklist --spec %s\n", path, path)
	return nil
}

func newCmdChecklistSchema(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the task spec's JSON Schema (draft 2020-12)",
		Long: `Print the JSON Schema every --spec file is validated against. Durations use
the format "go-duration": a number with a unit (1500ms, 30s, 20m, 13h).`,
		Example: `  lockctl checklist schema > lockctl-task.schema.json
  # VS Code (redhat.vscode-yaml) in settings.json:
  #   "yaml.schemas": {"lockctl-task.schema.json": "tasks/*.yaml"}`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := f.IO.Out.Write(checklist.Schema())
			return err
		},
	}
}
