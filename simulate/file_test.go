package simulate

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestSchemaIsJSON(t *testing.T) {
	var v map[string]any
	if err := json.Unmarshal(Schema(), &v); err != nil || v["$schema"] == nil {
		t.Fatalf("schema: %v", err)
	}
}

// Every error in a scenario file names the line and the field.
func TestParseFileErrors(t *testing.T) {
	const head = "name: x\npolicy: {lease: 30s}\nevents:\n"
	for _, tc := range []struct {
		file, want string
	}{
		{"", "line 1: the file is empty"},
		{"name: [\n", "line 1: not valid YAML"},
		{"name: x\npolicy: {lease: 30s}\n", "line 1: missing events"},
		{"name: x\npolicy: {lease: 30s}\nevents: []\n", "line 3: events: needs at least one event"},
		{"name: x\nnodes: 3\npolicy: {lease: 30s}\nevents:\n  - {at: 0s, do: crash, nodes: []}\n", "line 5: events[0].nodes: needs at least one node"},
		{"name: x\nnodes: 3\npolicy: {lease: 30s}\nevents:\n  - {at: 0s, do: crash, nodes: [1, 2, 3, 1, 2, 3, 1, 2, 3, 1]}\n", "line 5: events[0].nodes: has 10 nodes; at most 9"},
		{"name: x\npolicy: {lease: 30s}\nevents:\n  - {at: 0s, actor: A, do: acquire}\nfoo: 1\n", "line 5: foo: unknown field; accepted: check, checkpoints, description, events"},
		{head + "  - {at: 0s, actor: A, do: acquire}\n  - {at: 1s, actor: A, do: sleep}\n", `line 5: events[1].do: "sleep" is not one of acquire, renew`},
		{head + "  - {at: 0s, actor: A, do: acquire}\n  - {at: 1s, actor: A, do: pause, for: 37}\n", `line 5: events[1].for: "37" has no unit; did you mean 37s?`},
		{head + "  - {at: 0s, actor: A, do: acquire, colour: red}\n", "line 4: events[0].colour: unknown field; accepted: actor, at, by, do, for"},
		{head + "  - {at: 0s, actor: A, do: pause}\n", "line 4: events[0]: pause needs for"},
		{head + "  - {at: 0s, do: acquire}\n", "line 4: events[0]: acquire needs an actor"},
		{head + "  - {at: soon, actor: A, do: acquire}\n", `line 4: events[0].at: "soon" is not a duration`},
		// Durations Go takes but a scenario does not: said as such, not "not a duration".
		{head + "  - {at: -1s, actor: A, do: acquire}\n", `line 4: events[0].at: "-1s" is negative; times and lengths in a scenario are 0s or more`},
		{"name: x\npolicy: {lease: -30s}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n", `line 2: policy.lease: "-30s" is negative`},
		{head + "  - {at: +1s, actor: A, do: acquire}\n", `line 4: events[0].at: "+1s" is not written as a scenario's durations are: digits and a unit, no sign`},
		{head + "  - {at: 0s, actor: A, do: write, for: 1s}\n", "line 4: events[0].for: write takes no for"},
		{head + "  - {at: 1s, actor: B, do: failover}\n", "line 4: events[0].actor: failover happens to the server"},
		{"name: x\npolicy: {lease: 30s, budget: 20m}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n", "line 2: policy.budget: give either lease or budget, not both"},
		{"name: x\npolicy:\n  budget: 20m\n  mode: fast\nevents:\n  - {at: 0s, actor: A, do: acquire}\n", `line 4: policy.mode: "fast" is not one of trusted, ordinary`},
		{"name: x\npolicy: {lease: 30s}\nguards: {fencing: maybe}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n", "line 3: guards.fencing:"},
		{"name: x\npolicy: {lease: 30s}\nfence_start: 0\nevents:\n  - {at: 0s, actor: A, do: acquire}\n", "line 3: fence_start:"},
		{head + strings.Repeat("  - {at: 0s, actor: A, do: acquire}\n", 10001), "line 3: events: has 10001 events; at most 10000"},
		// Wrong types and empty values in the file's words, not the validator's.
		{"name: [a]\npolicy: {lease: 30s}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n", "line 1: name: got a list; want a string"},
		{"name: \"\"\npolicy: {lease: 30s}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n", "line 1: name: must not be empty"},
		{"name: x\npolicy: {}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n", "line 2: policy: needs at least one field; accepted: budget, lease"},
		{"name: x\npolicy: {lease: [30s]}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n", "line 2: policy.lease: got a list; want a duration such as 30s"},
		{"name: x\npolicy: {lease: 30s}\nfence_start: -1\nevents:\n  - {at: 0s, actor: A, do: acquire}\n", "line 3: fence_start: -1 is below 1, the smallest accepted"},
		{head + "  -\n", "line 4: events[0]: got null; want a mapping"},
		{head + strings.Repeat("#", MaxFileSize), "line 1: the file is over 1048576 bytes"},
		{head + "  - {at: 0s, actor: A, do: acquire}\n---\nname: y\n", "line 5: a second YAML document (---)"},
		{head + "  - {at: 0s, actor: A, <<: 5}\n", "line 4: events[0]: a key must be a plain name (a merge key takes mappings)"},
	} {
		_, err := ParseFile([]byte(tc.file))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %s…", tc.file, err, tc.want)
		}
	}
}

// Aliases and merge keys reach the scenario as they reach the validator.
func TestParseFileAliasesAndMerges(t *testing.T) {
	sc, err := ParseFile([]byte("name: x\npolicy: {lease: 30s}\nevents:\n  - &e {at: 0s, actor: A, do: acquire}\n  - *e\n  - {<<: *e, at: 5s, do: release}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Steps) != 3 || sc.Steps[1].Actor != "A" || sc.Steps[2].Actor != "A" || sc.Steps[2].Do != ActRelease || sc.Steps[2].AtMS != 5000 {
		t.Errorf("steps = %+v", sc.Steps)
	}
}

// MarshalFile writes what ParseFile reads back, for every built-in.
func TestMarshalFileRoundTrip(t *testing.T) {
	for _, name := range BuiltinNames() {
		sc, _ := Builtin(name, AllGuards().With("fencing", false), Overrides{})
		data, err := MarshalFile(sc)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseFile(data)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, data)
		}
		a, _ := Run(sc)
		b, _ := Run(back)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("%s: replay of the written file differs", name)
		}
	}
}

// FuzzParseFile: no input panics; a file that parses runs or returns an error.
func FuzzParseFile(f *testing.F) {
	for _, name := range BuiltinNames() {
		sc, _ := Builtin(name, AllGuards(), Overrides{})
		data, _ := MarshalFile(sc)
		f.Add(data)
	}
	f.Add([]byte("name: x\npolicy: {lease: 1ms, renew_every: 1ms}\nevents:\n  - {at: 0s, actor: A, do: acquire}\n  - {at: 1s, actor: A, do: failover}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseFile(data)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) || fe.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		_, _ = Run(sc)
	})
}
