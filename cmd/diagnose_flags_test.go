package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// parseDiagnose runs `lockctl diagnose args...` with a runF that only
// captures the options.
func parseDiagnose(t *testing.T, args ...string) (*DiagnoseOptions, error) {
	t.Helper()
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home + "/.config"}
	f := &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}, Env: env}}
	root := NewRootCmd(f)
	for _, c := range root.Commands() {
		if c.Name() == "diagnose" {
			root.RemoveCommand(c)
		}
	}
	var opts *DiagnoseOptions
	root.AddCommand(NewCmdDiagnose(f, func(o *DiagnoseOptions) error { opts = o; return nil }))
	root.SetArgs(append([]string{"diagnose"}, args...))
	return opts, root.Execute()
}

func TestDiagnoseFlags(t *testing.T) {
	t.Parallel()
	o, err := parseDiagnose(t, "order-1", "--fence", "34", "--store", "sqlite:shop.db", "--fence-query", "SELECT 1",
		"--fail-on", "unknown", "--lease-cap", "45s", "--field", "JobId", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if o.Fence == nil || *o.Fence != 34 || o.StoreURL != "sqlite:shop.db" || o.FenceQuery != "SELECT 1" || !o.FailOnUnknown ||
		o.Inspect.LeaseCap != 45*time.Second || strings.Join(o.Inspect.Values, ",") != "order-1" || o.Printer.Format != "yaml" {
		t.Errorf("options %+v", o)
	}
	ks, err := o.Inspect.KeySpec(false)
	if err != nil {
		t.Fatal(err)
	}
	if k := ks.Keys("order-1"); k.Lock != "lock:JobId:order-1" {
		t.Errorf("key from --field: %+v", k)
	}
	o, err = parseDiagnose(t, "--key", "lock:x", "--pid", "1,1", "--pid", "1", "--old-value", "12:5f0c2b6f3e1a4d7c9b8a6e5d4c3b2a19")
	if err != nil {
		t.Fatal(err)
	}
	if o.Fence != nil || o.OldValueFence == nil || *o.OldValueFence != 12 || len(o.PIDs) != 3 || strings.Join(o.Inspect.Keys, ",") != "lock:x" || o.FailOnUnknown {
		t.Errorf("options %+v", o)
	}
	for args, want := range map[string]string{
		"order-1 --key lock:x":               "give a VALUE or --key, not both",
		"order-1 --fence-query SELECT":       "--store and --fence-query go together",
		"order-1 --fail-on warning":          `fail-on "warning" is not accepted`,
		"order-1 --pid 0":                    "pid 0: no such process",
		"order-1 --old-value 5f0c2b6f3e1a4d": "carries no fence",
		"a b":                                "accepts at most 1 arg",
	} {
		if _, err := parseDiagnose(t, strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", args, err, want)
		}
	}
}
