package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/checklist"
	"github.com/lockctl/lockctl/internal/golden"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/spf13/cobra"
)

func testIO() (*IOStreams, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}, out, errOut
}

// TestChecklistFlags checks flags → options with a runF that only captures them.
func TestChecklistFlags(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.yaml", "b.yaml", "c.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, n), checklist.Template(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	io, _, _ := testIO()
	f := &Factory{IO: io}
	var got *ChecklistOptions
	root := &cobra.Command{Use: "lockctl", SilenceErrors: true, SilenceUsage: true,
		PersistentPreRunE: func(c *cobra.Command, _ []string) error { return f.load(c) }}
	root.PersistentFlags().String("redis", "", "")
	flagConfigKey(root.PersistentFlags(), "redis", keyRedisURL)
	root.PersistentFlags().StringP("output", "o", "", "")
	flagConfigKey(root.PersistentFlags(), "output", keyOutput)
	root.AddCommand(NewCmdChecklist(f, func(o *ChecklistOptions) error { got = o; return nil }))
	root.SetArgs([]string{"checklist", "--spec", filepath.Join(dir, "b.yaml") + "," + filepath.Join(dir, "a.yaml"),
		"--spec", filepath.Join(dir, "*.yaml"), "--fail-on", "warn", "--lease-cap", "45s", "--renew-every", "10s",
		"--redis", "redis://127.0.0.1:1/0", "--value", "order-7", "-o", "sarif"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	want := []string{"b.yaml", "a.yaml", "c.yaml"}
	if len(got.Specs) != len(want) {
		t.Fatalf("specs %v", got.Specs)
	}
	for i, w := range want {
		if filepath.Base(got.Specs[i]) != w {
			t.Errorf("specs %v, want %v", got.Specs, want)
		}
	}
	if got.FailOn != checklist.StatusWarn || got.Policy.LeaseCap != 45*time.Second || got.Policy.RenewEvery != 10*time.Second ||
		got.Value != "order-7" || got.Format != formatSARIF {
		t.Errorf("options %+v", got)
	}
}

// TestChecklistLive runs the whole command against a real Redis: the live
// keys of a spec turn two items into failures (exit 1) and show the
// observations; an unreachable server is exit 3.
func TestChecklistLive(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	if err := rdb.Set(ctx, "lock:OrderId:order-live", "3:0123456789abcdef0123456789abcdef", 10*time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(t.TempDir(), "order-import.yaml")
	if err := os.WriteFile(spec, checklist.Template(), 0o644); err != nil {
		t.Fatal(err)
	}
	io, out, errOut := testIO()
	code := Execute([]string{"checklist", "--spec", spec, "--redis", srv.URL(), "--value", "order-live", "-o", "json"}, io)
	if code != ExitCheckFailed {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var rep checklist.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	live := rep.Tasks[0].Live
	if live == nil || live.LockKey != "lock:OrderId:order-live" || live.FenceKey != "{lock:OrderId:order-live}:fence" || live.FenceExists || live.PTTLMS < 590000 {
		t.Errorf("live %+v", live)
	}
	fails := map[string]string{}
	for _, it := range rep.Tasks[0].Items {
		if it.Status == checklist.StatusFail {
			fails[it.ID] = it.Reason
		}
	}
	if len(fails) != 2 || !strings.Contains(fails["lease.matches-policy"], "above the spec's lease 1m") ||
		!strings.Contains(fails["commit_check.fence-counter"], "does not exist") {
		t.Errorf("fails %v", fails)
	}

	io, _, errOut = testIO()
	if code := Execute([]string{"checklist", "--spec", spec, "--redis", "redis://127.0.0.1:1/0", "--value", "x", "--timeout", "500ms"}, io); code != ExitRedis {
		t.Errorf("unreachable: exit %d, stderr %s", code, errOut)
	}
}

// TestChecklistSpecsGolden renders every rule's passing and failing spec
// (checklist/testdata/specs) through the command in the formats cmd renders;
// the checklist package's TestFormats has the same specs in json, markdown,
// junit, sarif and github.
func TestChecklistSpecsGolden(t *testing.T) {
	t.Parallel()
	for _, format := range []string{formatTable, formatYAML} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			io, out, errOut := testIO()
			code := Execute([]string{"checklist", "--spec", "../checklist/testdata/specs/*.yaml", "-o", format}, io)
			if code != ExitCheckFailed || errOut.Len() != 0 {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			golden.Assert(t, out.Bytes(), "")
		})
	}
}
