package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// parseInspect runs `lockctl inspect args...` with a runF that only
// captures the options.
func parseInspect(t *testing.T, args ...string) (*InspectOptions, *WatchOptions, error) {
	t.Helper()
	return parseInspectEnv(t, nil, args...)
}

// parseInspectEnv is parseInspect in an environment of its own: HOME and
// XDG_CONFIG_HOME in a temp dir, then env (KEY=VALUE).
func parseInspectEnv(t *testing.T, env []string, args ...string) (*InspectOptions, *WatchOptions, error) {
	t.Helper()
	home := t.TempDir()
	env = append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + home + "/.config"}, env...)
	f := &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}, Env: env}}
	root := NewRootCmd(f)
	for _, c := range root.Commands() {
		if c.Name() == "inspect" || c.Name() == "watch" {
			root.RemoveCommand(c)
		}
	}
	var io *InspectOptions
	var wo *WatchOptions
	root.AddCommand(NewCmdInspect(f, func(o *InspectOptions) error { io = o; return nil }),
		NewCmdWatch(f, func(o *WatchOptions) error { wo = o; return nil }))
	root.SetArgs(args)
	err := root.Execute()
	return io, wo, err
}

func TestInspectFlags(t *testing.T) {
	t.Parallel()
	o, _, err := parseInspect(t, "inspect", "order-1", "order-2", "--key", "a,b", "--key", "c", "--count", "200",
		"--fail-on", "warning", "--owner", "hex:00ff", "--lease-cap", "45s", "--field", "JobId", "--key-template", "job:{{{value}}}", "-o", "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.Values, "|") != "order-1|order-2" || strings.Join(o.Keys, "|") != "a,b|c" || o.Count != 200 ||
		o.FailOn != "warning" || !bytes.Equal(o.ExpectOwner, []byte{0, 0xff}) || o.LeaseCap != 45*time.Second || o.Format != "jsonl" {
		t.Errorf("options %+v", o)
	}
	ks, err := o.KeySpec(true)
	if err != nil {
		t.Fatal(err)
	}
	if k := ks.Keys("42"); k.Lock != "job:{42}" || k.Fence != "job:{42}:fence" {
		t.Errorf("keys from --field/--key-template: %+v", k)
	}
	env := []string{"LOCKCTL_LOCK_KEY_TEMPLATE=env:{value}"}
	o, _, err = parseInspectEnv(t, env, "inspect", "x")
	if err != nil {
		t.Fatal(err)
	}
	if ks, _ := o.KeySpec(false); ks.Keys("x").Lock != "env:x" || o.Count != 5000 || o.Limit != 100 || o.Format != "table" {
		t.Errorf("env template / defaults: %q %+v", ks.Keys("x").Lock, o)
	}
	if o, _, err := parseInspectEnv(t, env, "inspect", "--pattern", "lock:*"); err != nil || o.Pattern != "lock:*" {
		t.Errorf("--pattern: %v %+v", err, o)
	}
	// A scan does not read the VALUEs or --keys given with it.
	if _, _, err := parseInspectEnv(t, env, "inspect", "x", "--pattern", "lock:*"); err == nil || !strings.Contains(err.Error(), "--pattern scans the keyspace on its own") {
		t.Errorf("--pattern with a VALUE: %v", err)
	}
	if _, _, err := parseInspectEnv(t, env, "inspect", "x", "--owner", "hex:zz"); err == nil || !strings.Contains(err.Error(), `owner "hex:zz" is not hex`) {
		t.Errorf("bad --owner: %v", err)
	}
	if _, _, err := parseInspectEnv(t, env, "inspect", "x", "--count", "0"); err == nil || !strings.Contains(err.Error(), "count 0 must be at least 1") {
		t.Errorf("bad --count: %v", err)
	}
}

func TestWatchFlags(t *testing.T) {
	t.Parallel()
	_, w, err := parseInspect(t, "watch", "order-1", "--key", "k", "--interval", "250ms", "--duration", "1m", "--renew-bound", "2h", "-o", "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if w.Interval != 250*time.Millisecond || w.Duration != time.Minute || w.RenewBound != 2*time.Hour || w.Format != "jsonl" ||
		strings.Join(w.Values, ",") != "order-1" || strings.Join(w.Keys, ",") != "k" {
		t.Errorf("options %+v", w)
	}
	_, w, err = parseInspect(t, "watch", "x")
	if err != nil || w.Interval != 100*time.Millisecond || w.Duration != 0 || w.RenewBound != 12*time.Hour {
		t.Errorf("defaults %+v %v", w, err)
	}
	if _, _, err := parseInspect(t, "watch", "x", "-o", "json"); err == nil || !strings.Contains(err.Error(), `output "json" is not one of table, jsonl`) {
		t.Errorf("watch -o json: %v", err)
	}
}

func TestFenceFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ field, tmpl, key, want string }{
		{"", "", "lock:OrderId:1", "{lock:OrderId:1}:fence"},
		{"", "{key}:fence", "lock:OrderId:1", "lock:OrderId:1:fence"},
		{"JobId", "fence:{field}:{{{key}}}", "lock:x", "fence:JobId:{lock:x}"},
		{"", "fence:{value}", "lock:OrderId:1", "{lock:OrderId:1}:fence"},
	} {
		if got := fenceFor(tc.field, tc.tmpl)(tc.key); got != tc.want {
			t.Errorf("fenceFor(%q, %q)(%q) = %q, want %q", tc.field, tc.tmpl, tc.key, got, tc.want)
		}
	}
}
