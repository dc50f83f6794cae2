package inspect_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

const billingLayouts = `layouts:
  - name: billing-lock
    library: our billing service (Go)
    key: "billing:lock:*"
    value: '(?P<fence>[0-9]+)\|(?P<holder>[a-z0-9-]+)\|(?P<owner>[0-9a-f]{32})'
    fence: true
    companions:
      - role: fence_counter
        key: "{key}:seq"
`

// TestDeclaredLayout: a layout declared in a file gets the same detection,
// findings and JSON as a built-in one (issue 27 item 4).
func TestDeclaredLayout(t *testing.T) {
	ds, err := inspect.ParseLayouts("layouts.yaml", []byte(billingLayouts))
	must(t, err)
	c := client(t)
	k := "billing:lock:{" + redistest.Name(t) + "}" // the counter {key}:seq shares its slot
	token := randHex(16)
	must(t, c.Set(ctx, k, "7|worker-3|"+token, 30*time.Second).Err())
	opts := inspect.Options{Declared: inspect.Compile(ds)}
	l := readOne(t, c, k, opts)
	if l.Layout.Name != "billing-lock" || l.Layout.Confidence != inspect.Likely || l.Owner != token || l.Holder.ClientID != "worker-3" || l.Fence == nil || *l.Fence.Value != 7 {
		t.Errorf("without its counter: layout %+v owner %q holder %+v fence %+v", l.Layout, l.Owner, l.Holder, l.Fence)
	}
	if codes(l) != "NO_FENCE:warning" {
		t.Errorf("without its counter: findings %s", codes(l))
	}
	must(t, c.Set(ctx, k+":seq", "7", 0).Err())
	if l := readOne(t, c, k, opts); l.Layout.Confidence != inspect.Certain || codes(l) != "" || *l.Fence.Counter != 7 {
		t.Errorf("with its counter: layout %+v fence %+v findings %s", l.Layout, l.Fence, codes(l))
	}
	must(t, c.Set(ctx, k+":seq", "5", 0).Err())
	if l := readOne(t, c, k, opts); codes(l) != "FENCE_MISMATCH:error" {
		t.Errorf("counter behind the token: findings %s", codes(l))
	}
	// As lockctl's own: a later acquire's newer token, a token no INCR issued.
	must(t, c.Set(ctx, k+":seq", "9", 0).Err())
	if l := readOne(t, c, k, opts); codes(l) != "FENCE_MISMATCH:error" || !strings.Contains(l.Findings[0].Message, "a later acquire issued a newer token") {
		t.Errorf("counter ahead of the token: findings %+v", l.Findings)
	}
	must(t, c.Set(ctx, k, "99999999999999999999|worker-3|"+token, 30*time.Second).Err())
	if l := readOne(t, c, k, opts); codes(l) != "FENCE_MISMATCH:error" || l.Layout.Confidence != inspect.Likely {
		t.Errorf("token above INCR's range: layout %+v findings %+v", l.Layout, l.Findings)
	}
	must(t, c.Set(ctx, k, "7|worker-3|"+token, 30*time.Second).Err())
	must(t, c.Persist(ctx, k).Err())
	must(t, c.Set(ctx, k+":seq", "7", 0).Err())
	if l := readOne(t, c, k, opts); codes(l) != "NO_TTL:error" {
		t.Errorf("no TTL: findings %s", codes(l))
	}
}

// TestDeclaredCompanionByName: a key a layout's companion template names is
// that layout's companion, with no findings, whether or not the lock
// exists: the counter outlives the lock (issue 27 polish, item 1). The
// built-in layouts' companions go by the same rule.
func TestDeclaredCompanionByName(t *testing.T) {
	ds, err := inspect.ParseLayouts("layouts.yaml", []byte(billingLayouts))
	must(t, err)
	c := client(t)
	k := "billing:lock:{" + redistest.Name(t) + "}"
	opts := inspect.Options{Declared: inspect.Compile(ds)}
	must(t, c.Set(ctx, k+":seq", "7", 0).Err())
	must(t, c.Set(ctx, k, "7|worker-3|"+randHex(16), 30*time.Second).Err())
	for _, when := range []string{"with the lock", "after the lock expired"} {
		l := readOne(t, c, k+":seq", opts)
		if l.Layout.Name != "billing-lock" || l.Role != inspect.RoleFence || codes(l) != "" {
			t.Errorf("%s: layout %+v role %q findings %s; want billing-lock fence_counter, none", when, l.Layout, l.Role, codes(l))
		}
		must(t, c.Del(ctx, k).Err())
	}
	must(t, c.Set(ctx, k+":seq", "not a number", 0).Err())
	if l := readOne(t, c, k+":seq", opts); l.Role != "" {
		t.Errorf("a value INCR cannot raise: role %q, want none", l.Role)
	}
	for key, want := range map[string]string{
		"redisson_lock_token:{" + redistest.Name(t) + "}": "redisson-fenced " + inspect.RoleFence,
		"lock-signal:" + redistest.Name(t):                "python-redis-lock " + inspect.RoleSignal,
		"redisson_lock_queue:{" + redistest.Name(t) + "}": "redisson-fair " + inspect.RoleQueue,
	} {
		if strings.HasPrefix(key, "redisson_lock_token") {
			must(t, c.Set(ctx, key, "3", 0).Err())
		} else {
			must(t, c.RPush(ctx, key, "1").Err())
		}
		if l := readOne(t, c, key, inspect.Options{}); l.Layout.Name+" "+l.Role != want || codes(l) != "" {
			t.Errorf("%s: %s %s, findings %s; want %s", key, l.Layout.Name, l.Role, codes(l), want)
		}
	}
}

// TestSymfonyProbe: Symfony's TIME check, "1" for 1 ms at a fixed key,
// is its probe, not a lock held for a millisecond (watch --pattern caught
// one once); "1" under another name is still no probe.
func TestSymfonyProbe(t *testing.T) {
	c := client(t)
	must(t, c.Set(ctx, "symfony_check_support_time", "1", time.Minute).Err()) // PX 1 in Symfony: a minute to read it here
	if l := readOne(t, c, "symfony_check_support_time", inspect.Options{}); l.Layout.Name != "symfony-lock" || l.Role != inspect.RoleProbe || codes(l) != "" {
		t.Errorf("probe: layout %+v role %q findings %s; want symfony-lock probe, none", l.Layout, l.Role, codes(l))
	}
	k := "check_support_time:" + redistest.Name(t)
	must(t, c.Set(ctx, k, "1", time.Minute).Err())
	if l := readOne(t, c, k, inspect.Options{}); l.Layout.Name == "symfony-lock" || l.Role == inspect.RoleProbe {
		t.Errorf("%s: layout %+v role %q; want no probe", k, l.Layout, l.Role)
	}
}

// TestParseLayoutsErrors: each mistake is one line naming the file, the
// line, the value and what is accepted.
func TestParseLayoutsErrors(t *testing.T) {
	entry := func(s string) string { return "layouts:\n  - name: x\n    key: \"a:*\"\n    value: '.+'\n" + s }
	for in, want := range map[string]string{
		"layouts: 3\n":                   "layouts.yaml:1: want a mapping with one key, layouts",
		"layout:\n  - name: x\n":         "layouts.yaml:1: want a mapping with one key, layouts",
		entry("    colour: red\n"):       "layouts.yaml:5: layouts[0]: unknown field colour; accepted: acquired_within, companions, confidence, expiry, fence, field, field_value, job_id, key, lease, library, member, member_evidence, mode_field, name, owner_hex, read_lease, role, score, size, type, unit, unleased_score, value, write_member",
		entry("    fence: yes please\n"): `layouts.yaml:5: layouts[0]: fence is "yes please" (a string); want true or false`,
		entry("    fence: true\n"):       "layouts.yaml:5: layouts[0]: fence: true needs a companion with role fence_counter",
		entry("    type: blob\n"):        `layouts.yaml:5: layouts[0]: type "blob"; accepted: string, hash, zset, list, set`,
		entry("    size: -3\n"):          "layouts.yaml:5: layouts[0]: size is -3 (a whole number); want the value's length in bytes, a whole number from 1 to 65536",
		entry("    type: zset\n"):        "layouts.yaml:2: layouts[0]: type zset needs member (member, score, unit)",
		entry("    member: '.+'\n"):      "layouts.yaml:5: layouts[0]: member is not a field of type string; it takes value, size",
		"layouts:\n  - name: x\n    type: zset\n    key: \"a:*\"\n    member: '.+'\n    score: soon\n    unit: ms\n": `layouts.yaml:6: layouts[0]: score "soon"; accepted: deadline, acquired`,
		"layouts:\n  - name: x\n    type: hash\n    key: \"a:*\"\n    field: '(?P<boss>.+)'\n":                       `layouts.yaml:5: layouts[0]: field: named group "boss"; accepted: owner, fence, holder, acquired_at`,
		"layouts:\n  - name: x\n    key: \"a:*\"\n    value: '(?P<who>.+)'\n":                                        "layouts.yaml:4: layouts[0]: value: named group \"who\"; accepted: owner, fence, holder, acquired_at",
		"layouts:\n  - name: x\n    key: \"a:*\"\n    value: '(+'\n":                                                 "layouts.yaml:4: layouts[0]: value \"(+\" is no regular expression (missing argument to repetition operator); accepted: RE2 syntax",
		"layouts:\n  - name: x\n    key: \"a:*\"\n    value: '[a-z)'\n":                                              `layouts.yaml:4: layouts[0]: value "[a-z)" is no regular expression (missing closing ]); accepted: RE2 syntax, https://github.com/google/re2/wiki/Syntax`,
		"layouts:\n  - name: x\n    key: \"a:*\"\n    value: 'a)|(b'\n":                                              `layouts.yaml:4: layouts[0]: value "a)|(b" is no regular expression (unexpected ))`,
		"layouts:\n  - name: redsync\n    key: \"a:*\"\n    value: '.+'\n":                                           "layouts.yaml:2: layouts[0]: name \"redsync\" is a built-in layout's",
		"layouts:\n  - name: x\n    key: \"a:[ab]\"\n    value: '.+'\n":                                              "layouts.yaml:3: layouts[0]: key \"a:[ab]\": only * and ? are globs here",
		"layouts:\n  - name: x\n    value: '.+'\n":                                                                   "layouts.yaml:2: layouts[0]: key is missing; name and key are required",
		"layouts:\n  - value: '.+'\n":                                                                                `layouts.yaml:2: layouts[0]: name and key are missing; name and key are required`,
		entry("    library: {a: b}\n"):                                                                               "layouts.yaml:5: layouts[0]: library is a mapping; want text",
		"layouts:\n  - name: [1, 2]\n    key: \"a:*\"\n    value: '.+'\n":                                            "layouts.yaml:2: layouts[0]: name is a list; want text",
		"layouts:\n  - ~\n":    "layouts.yaml:2: layouts[0]: is null; want a mapping with name, key, value",
		"layouts:\n  - 5\n":    "layouts.yaml:2: layouts[0]: is 5 (a whole number); want a mapping with name, key, value",
		entry("    type: 5\n"): "layouts.yaml:5: layouts[0]: type is 5 (a whole number); accepted: string, hash",
		entry("    companions: [{role: fence_counter}]\n"):       "layouts.yaml:5: layouts[0]: companions[0]: key is missing; want a mapping with role and key (text)",
		entry("    companions: [fence_counter]\n"):               `layouts.yaml:5: layouts[0]: companions[0] is "fence_counter" (a string); want a mapping with role and key`,
		"layouts:\n  - name: x\n    key: \"a:*\"\n    name: y\n": "layouts.yaml:4: layouts[0].name: duplicate field (first on line 2)",
		"layouts: []\n---\nlayouts: []\n":                        "layouts.yaml:2: a second YAML document (---); a file holds one list of layouts",
		"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n": "layouts.yaml:5: the file expands to more than 20000 values or 8 levels (YAML aliases?)",
		"layouts:\n" + strings.Repeat("  - {}\n", 20001):                                                                                           "layouts.yaml:1: the file expands to more than 20000 values or 8 levels (YAML aliases?)",
		entry("    companions:\n      - role: boss\n        key: \"{key}:b\"\n"):                                                                   "layouts.yaml:5: layouts[0]: companions[0]: role \"boss\"; accepted: fence_counter",
		entry("    companions:\n      - {role: job, key: x, kind: hash}\n"):                                                                        "layouts.yaml:5: layouts[0]: companions[0]: unknown field kind; accepted: key, optional, required, role, type, value",
		entry("  - name: x\n    key: \"a:*\"\n    value: '.+'\n"):                                                                                  "layouts.yaml:5: layouts[1]: name \"x\" is declared twice for type string with the same key and expressions",
		"layouts:\n  - name: x\n    key: \"a:*\n":                                                                                                  "layouts.yaml:3:",
		"layouts:\n  - name: x\n    type: any\n    key: \"a:*\"\n":                                                                                 "layouts.yaml:3: layouts[0]: type any needs a role",
		"layouts:\n  - name: x\n    type: stream\n    key: \"a:*\"\n":                                                                              "layouts.yaml:3: layouts[0]: type stream needs a role",
		"layouts:\n  - name: x\n    type: any\n    role: job\n    key: \"a:*\"\n    value: '.+'\n":                                                 "layouts.yaml:6: layouts[0]: value is not a field of type any",
		"layouts:\n  - name: x\n    key: [\"a:*\", 5]\n    value: '.+'\n":                                                                          "layouts.yaml:3: layouts[0]: key[1] is 5 (a whole number); want a glob (text)",
		"layouts:\n  - name: x\n    key: []\n    value: '.+'\n":                                                                                    "layouts.yaml:3: layouts[0]: key is a list; want a glob (text) or a list of globs",
		"layouts:\n  - name: x\n    key: [\"a:*\", \"b:[x]\"]\n    value: '.+'\n":                                                                  `layouts.yaml:3: layouts[0]: key "b:[x]": only * and ? are globs here`,
		entry("    companions:\n      - {role: job, key: x, type: any}\n"):                                                                         `layouts.yaml:5: layouts[0]: companions[0]: type "any"; accepted: string, hash, zset, list, set, stream`,
		entry("    acquired_within: a day\n"):                                                                                                      `layouts.yaml:5: layouts[0]: acquired_within is "a day" (a string); want a duration such as 24h or 90m`,
		entry("    acquired_within: -5m\n"):                                                                                                        `layouts.yaml:5: layouts[0]: acquired_within is "-5m" (a string); want a duration such as 24h or 90m`,
		entry("    acquired_within: 24h\n"):                                                                                                        "layouts.yaml:5: layouts[0]: acquired_within needs a string layout with an acquired_at group in its value",
		"layouts:\n  - name: x\n    type: zset\n    key: \"a:*\"\n    member: '.+'\n    score: deadline\n    unit: ms\n    lease: key\n":           "layouts.yaml:8: layouts[0]: lease: key needs score: acquired",
		"layouts:\n  - name: x\n    type: zset\n    key: \"a:*\"\n    member: '.+'\n    score: acquired\n    unit: ms\n    lease: ttl\n":           `layouts.yaml:8: layouts[0]: lease "ttl"; accepted: key`,
		"layouts:\n  - name: x\n    type: set\n    key: \"a:*\"\n    member: '.+'\n    member_evidence: '(+'\n":                                    `layouts.yaml:6: layouts[0]: member_evidence "(+" is no regular expression`,
		"layouts:\n  - name: x\n    type: zset\n    key: \"a:*\"\n    member: '.+'\n    score: deadline\n    unit: ms\n    unleased_score: soon\n": `layouts.yaml:8: layouts[0]: unleased_score is "soon" (a string); want the score of a holder without a lease`,
		entry("    owner_hex: 1\n"):                                                                                                                "layouts.yaml:5: layouts[0]: owner_hex is 1 (a whole number); want true or false",
		entry("    write_member: __write__\n"):                                                                                                     "layouts.yaml:5: layouts[0]: write_member is not a field of type string; it takes value, size",
		entry("    expiry: soon\n"):                                                                                                                `layouts.yaml:5: layouts[0]: expiry "soon"; accepted: key, value`,
		entry("    expiry: value\n"):                                                                                                               "layouts.yaml:5: layouts[0]: expiry: value needs a string layout with an expires_at group in its value or a companion's value",
		entry("    companions:\n      - {role: expire, key: \"{key}:x\", value: '(+'}\n"):                                                          `layouts.yaml:5: layouts[0]: companions[0]: value "(+" is no regular expression (missing argument to repetition operator)`,
		entry("    companions:\n      - {role: expire, key: \"{key}:x\", value: '(?P<who>.+)'}\n"):                                                 `layouts.yaml:5: layouts[0]: companions[0]: value: named group "who"; accepted: owner`,
		entry("    companions:\n      - {role: job, key: \"{key}:x\", type: hash, value: '.+'}\n"):                                                 "layouts.yaml:5: layouts[0]: companions[0]: value needs type string (a value to read), not hash",
		"layouts:\n  - name: x\n    type: hash\n    key: \"a:*\"\n    field: '.+'\n    read_lease: \"{key}:{field}\"\n":                            "layouts.yaml:6: layouts[0]: read_lease needs mode_field",
		"layouts:\n  - name: x\n    type: hash\n    key: \"a:*\"\n    field: '.+'\n    mode_field: m\n    read_lease: \"{key}:{count}\"\n":         `layouts.yaml:7: layouts[0]: read_lease "{key}:{count}" names {count}, which needs a count group in field or field_value`,
		entry("    mode_field: mode\n"):                                                                                                            "layouts.yaml:5: layouts[0]: mode_field is not a field of type string; it takes value, size",
		entry("    companions:\n      - {role: expire, key: \"{key}:x\", value: 5}\n"):                                                             "layouts.yaml:5: layouts[0]: companions[0]: value is 5 (a whole number); want a regular expression (text)",
	} {
		_, err := inspect.ParseLayouts("layouts.yaml", []byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line beginning %q", in, err, want)
		}
	}
}

// TestDeclaredQueueKeys: a role layout of type any or stream with a list
// of key globs is known by name beside its required companion, and not
// without it; the key itself is no evidence of its own layout (issue 44).
func TestDeclaredQueueKeys(t *testing.T) {
	ds, err := inspect.ParseLayouts("layouts.yaml", []byte(`layouts:
  - name: our-jobs
    role: job_queue
    type: any
    key: ["jobs:*:pending", "jobs:*:log", "jobs:*:claim"]
    companions:
      - {role: job_queue, key: "jobs:{1}:claim", type: string, required: true}
  - name: our-jobs
    role: job_queue
    type: stream
    key: "jobs:*:events"
    companions:
      - {role: job_queue, key: "jobs:{1}:claim", required: true}
`))
	must(t, err)
	if len(ds) != 4 || ds[1].Key != "jobs:*:log" || ds[3].Type != "stream" {
		t.Fatalf("parsed %+v; want one entry per glob", ds)
	}
	opts := inspect.Options{Declared: inspect.Compile(ds)}
	c := client(t)
	p := "jobs:" + redistest.Name(t) + ":"
	must(t, c.RPush(ctx, p+"pending", "7").Err())
	must(t, c.XAdd(ctx, &redis.XAddArgs{Stream: p + "events", Values: []string{"job", "7"}}).Err())
	must(t, c.Set(ctx, p+"claim", "worker-1", 30*time.Second).Err())
	for k, want := range map[string]string{p + "pending": "our-jobs", p + "events": "our-jobs", p + "claim": "unknown"} {
		if l := readOne(t, c, k, opts); l.Layout.Name != want || (want == "our-jobs") != (l.Role == inspect.RoleJobQueue) {
			t.Errorf("beside the claim, %s: layout %+v role %q; want %s", k, l.Layout, l.Role, want)
		}
	}
	must(t, c.Del(ctx, p+"claim").Err())
	for _, k := range []string{p + "pending", p + "events"} {
		if l := readOne(t, c, k, opts); l.Layout.Name == "our-jobs" || l.Role != "" {
			t.Errorf("without the claim, %s: layout %+v role %q; want no role", k, l.Layout, l.Role)
		}
	}
}

// TestParseLayoutsEveryMistake: a file with several mistakes gets one line
// for each, in the file's order.
func TestParseLayoutsEveryMistake(t *testing.T) {
	in := "layouts:\n  - name: a\n    key: \"a:*\"\n    value: '(+'\n    colour: red\n  - name: b\n    type: zset\n    key: \"b:*\"\n    member: '.+'\n    score: deadline\n    unit: h\n"
	_, err := inspect.ParseLayouts("layouts.yaml", []byte(in))
	want := []string{
		"layouts.yaml:5: layouts[0]: unknown field colour;",
		`layouts.yaml:11: layouts[1]: unit "h"; accepted: ms, s`,
	}
	lines := strings.Split(fmt.Sprint(err), "\n")
	if len(lines) != len(want) {
		t.Fatalf("error %v: want %d lines", err, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d %q, want it to begin %q", i+1, lines[i], w)
		}
	}
}

// TestBuiltinLayouts: the embedded built-in layouts pass the loader and
// checks a user's file goes through, and each name has a row in Layouts.
func TestBuiltinLayouts(t *testing.T) {
	// The file is parsed on first use: a mistake in it panics here.
	inspect.Analyze("x", inspect.Value{Type: "string", PTTL: 1000, Bytes: []byte("v")}, nil, inspect.Options{})
	data, err := os.ReadFile("builtin_layouts.yaml")
	must(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "- name: ")
		if ok && !slices.ContainsFunc(inspect.Layouts, func(l inspect.LayoutInfo) bool { return l.Name == name }) {
			t.Errorf("built-in layout %q has no row in inspect.Layouts", name)
		}
	}
}

const typedLayouts = `layouts:
  - name: report-reentrant
    type: hash
    key: "reports:lock:*"
    field: '(?P<holder>[a-z0-9-]+)/(?P<owner>[0-9a-f]{16})'
    field_value: '(?P<count>[0-9]+)'
    companions:
      - {role: signal, key: "reports:signal:{1}", type: list, optional: true}
  - name: export-slots
    type: zset
    key: "exports:*:slots"
    member: '(?P<owner>[a-z0-9-]+)#[0-9]+'
    score: deadline
    unit: ms
  - name: report-reentrant
    type: list
    key: "reports:signal:*"
    member: 'released'
    role: signal
  - name: doc-readers
    type: set
    key: "doc:readers:*"
    member: '[a-z0-9.-]+:[0-9]+'
  - name: job-claim
    key: "claims:*:*"
    value: '(?P<owner>[0-9a-f]{8})'
    job_id: "{2}"
    companions:
      - {role: job, key: "jobs:{1}:{2}:{value}", type: hash, required: true}
`

// TestDeclaredTypes: hash, zset, list and set layouts a user declares get
// their holders, roles and companions (issue 27 item 2).
func TestDeclaredTypes(t *testing.T) {
	ds, err := inspect.ParseLayouts("layouts.yaml", []byte(typedLayouts))
	must(t, err)
	opts := inspect.Options{Declared: inspect.Compile(ds)}
	c := client(t)
	n := redistest.Name(t)
	now := time.Now()

	must(t, c.HSet(ctx, "reports:lock:"+n, "worker-3/9f2c4e1a7b3d5f60", "2").Err())
	must(t, c.PExpire(ctx, "reports:lock:"+n, 30*time.Second).Err())
	l := readOne(t, c, "reports:lock:"+n, opts)
	if l.Layout.Name != "report-reentrant" || l.Layout.Confidence != inspect.Likely || l.Owner != "9f2c4e1a7b3d5f60" || l.Holder.ClientID != "worker-3" || *l.HoldCount != 2 || len(l.Companions) != 0 {
		t.Errorf("hash, no signal: %+v", l)
	}
	must(t, c.RPush(ctx, "reports:signal:"+n, "released").Err())
	if l := readOne(t, c, "reports:lock:"+n, opts); l.Layout.Confidence != inspect.Certain || len(l.Companions) != 1 {
		t.Errorf("hash with its signal: layout %+v companions %+v", l.Layout, l.Companions)
	}
	if l := readOne(t, c, "reports:signal:"+n, opts); l.Layout.Name != "report-reentrant" || l.Role != inspect.RoleSignal || len(l.Findings) != 0 {
		t.Errorf("signal list: layout %+v role %q findings %v", l.Layout, l.Role, l.Findings)
	}

	z := "exports:" + n + ":slots"
	must(t, c.ZAdd(ctx, z, redis.Z{Score: float64(now.Add(20 * time.Second).UnixMilli()), Member: "export-1#0"},
		redis.Z{Score: float64(now.Add(20 * time.Second).UnixMilli()), Member: "export-1#1"},
		redis.Z{Score: float64(now.Add(-5 * time.Second).UnixMilli()), Member: "export-2#0"}).Err())
	l = readOne(t, c, z, inspect.Options{Declared: opts.Declared, Permits: 1})
	if l.Layout.Name != "export-slots" || len(l.Holders) != 2 || l.Holders[1].Permits != 2 || !l.Holders[0].Expired || codes(l) != "STALE_HOLDERS:info,NO_FENCE:warning,OVER_ADMITTED:error" {
		t.Errorf("zset: holders %+v findings %s", l.Holders, codes(l))
	}

	must(t, c.SAdd(ctx, "doc:readers:"+n, "web-1:4242").Err())
	if l := readOne(t, c, "doc:readers:"+n, opts); l.Layout.Name != "doc-readers" || len(l.Holders) != 1 || l.Holders[0].Owner != "web-1:4242" || codes(l) != "NO_TTL:error,NO_FENCE:warning" {
		t.Errorf("set: layout %+v holders %+v findings %s", l.Layout, l.Holders, codes(l))
	}

	k := "claims:" + n + ":job-7"
	must(t, c.Set(ctx, k, "0badcafe", 30*time.Second).Err())
	if l := readOne(t, c, k, opts); l.Layout.Name == "job-claim" {
		t.Errorf("claim without its required job hash: layout %+v", l.Layout)
	}
	must(t, c.HSet(ctx, "jobs:"+n+":job-7:0badcafe", "state", "running").Err())
	if l := readOne(t, c, k, opts); l.Layout.Name != "job-claim" || l.Holder.JobID != "job-7" || len(l.Companions) != 1 {
		t.Errorf("claim with its job hash: layout %+v holder %+v companions %+v", l.Layout, l.Holder, l.Companions)
	}
}

// FuzzParseLayouts: no layouts file makes the loader, or a lock matched
// against what it accepted, panic; a mistake is an error, one line each.
func FuzzParseLayouts(f *testing.F) {
	f.Add([]byte(billingLayouts), "billing:lock:{a}", "1|w-1|0123456789abcdef0123456789abcdef")
	f.Add([]byte(typedLayouts), "claims:a:b", "0badcafe")
	f.Add([]byte("layouts:\n  - name: x\n    key: \"*{1}*\"\n    value: '(?P<owner>.*)'\n    job_id: '{1}{9}{value}'\n"), "a{1}b", "v")
	f.Fuzz(func(t *testing.T, data []byte, key, value string) {
		ds, err := inspect.ParseLayouts("l.yaml", data)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "l.yaml") {
					t.Fatalf("error line %q does not name the file", line)
				}
			}
			return
		}
		opts := inspect.Options{Declared: inspect.Compile(ds)}
		for _, v := range []inspect.Value{
			{Type: "string", PTTL: 1000, Bytes: []byte(value), Size: int64(len(value))},
			{Type: "hash", PTTL: -1, Fields: [][2]string{{value, "1"}}, Size: 1},
			{Type: "zset", PTTL: -1, Items: []string{value, "1700000000000"}, Size: 1},
			{Type: "set", PTTL: -1, Items: []string{value}, Size: 1},
		} {
			inspect.Analyze(key, v, map[string]inspect.Value{}, opts)
		}
	})
}

// TestCompanionValue: a companion's value expression decides whether it
// counts and fills the holder; "expiry: value" makes no TTL a warning.
// The built-in redis-lock-gem is such an entry: the owner key is the lock,
// its expire key a companion known by name whose value is its expiry.
func TestCompanionValue(t *testing.T) {
	c := client(t)
	name := redistest.Name(t)
	exp := time.Now().Add(time.Minute).Truncate(time.Second)
	// mlanett/redis-lock tag v0.2.7, lib/redis-lock.rb: MSETNX lock:owner:<key> <host:pid> lock:expire:<key> <now+life>.
	must(t, c.MSetNX(ctx, "lock:owner:"+name, "worker-3:9120", "lock:expire:"+name, exp.Unix()).Err())
	l := readOne(t, c, "lock:owner:"+name, inspect.Options{})
	if l.Layout.Name != "redis-lock-gem" || l.Layout.Confidence != inspect.Certain || l.Holder.Host != "worker-3" || l.Holder.PID != 9120 || l.Holder.ValueExpiresAt != exp.UTC().Format("2006-01-02T15:04:05.000Z") {
		t.Errorf("owner key: layout %+v holder %+v", l.Layout, l.Holder)
	}
	// MSETNX of the two keys: a cluster refuses it (CROSSSLOT).
	if codes(l) != "NO_TTL:warning,NO_FENCE:warning,CROSS_SLOT:warning" || len(l.Companions) != 1 || l.Companions[0].Role != inspect.RoleExpire {
		t.Errorf("owner key: findings %s companions %+v", codes(l), l.Companions)
	}
	if l := readOne(t, c, "lock:expire:"+name, inspect.Options{}); l.Layout.Name != "redis-lock-gem" || l.Role != inspect.RoleExpire || codes(l) != "" {
		t.Errorf("expire key: layout %+v role %q findings %s; want redis-lock-gem expire, none", l.Layout, l.Role, codes(l))
	}
	// An expire key whose value is no Unix time is not the gem's: the owner
	// loses its certainty and its expiry, the key is a lock of its own.
	must(t, c.Set(ctx, "lock:expire:"+name, "9f2c4e1a-7b3d-4f60-812a-4c6e8b0d2f41", time.Minute).Err())
	if l := readOne(t, c, "lock:owner:"+name, inspect.Options{}); l.Layout.Confidence != inspect.Likely || l.Holder.ValueExpiresAt != "" || l.Companions != nil {
		t.Errorf("owner beside a UUID: layout %+v holder %+v companions %+v", l.Layout, l.Holder, l.Companions)
	}
	if l := readOne(t, c, "lock:expire:"+name, inspect.Options{}); l.Role != "" {
		t.Errorf("a UUID at an expire key: role %q, want a lock", l.Role)
	}

	// A declared layout: the owner is in a companion, the lock's own
	// value its expiry.
	ds, err := inspect.ParseLayouts("layouts.yaml", []byte(`layouts:
  - name: nightly-job
    key: "nightly:*:until"
    value: '(?P<expires_at>[0-9]{13})'
    expiry: value
    companions:
      - {role: owner, key: "nightly:{1}:who", value: '(?P<owner>(?P<host>[a-z0-9-]+)/(?P<pid>[0-9]+))'}
`))
	must(t, err)
	opts := inspect.Options{Declared: inspect.Compile(ds)}
	k := "nightly:" + name
	must(t, c.Set(ctx, k+":until", exp.UnixMilli(), 0).Err())
	must(t, c.Set(ctx, k+":who", "db-7/4242", 0).Err())
	l = readOne(t, c, k+":until", opts)
	if l.Layout.Name != "nightly-job" || l.Layout.Confidence != inspect.Certain || l.Owner != "db-7/4242" || l.Holder.Host != "db-7" || l.Holder.PID != 4242 || l.Holder.ValueExpiresAt == "" {
		t.Errorf("declared: layout %+v owner %q holder %+v", l.Layout, l.Owner, l.Holder)
	}
	if codes(l) != "NO_TTL:warning,NO_FENCE:warning,CROSS_SLOT:warning" {
		t.Errorf("declared: findings %s", codes(l))
	}
	var scanned []inspect.Lock
	r := &inspect.Reader{Options: opts}
	must(t, r.Scan(ctx, c, inspect.ScanOptions{Pattern: k + ":*"}, func(l inspect.Lock) error { scanned = append(scanned, l); return nil }))
	slices.SortFunc(scanned, func(a, b inspect.Lock) int { return strings.Compare(a.Key, b.Key) })
	if len(scanned) != 2 || scanned[0].Owner != "db-7/4242" || scanned[1].Role != inspect.RoleOwner {
		t.Errorf("scan: %+v", scanned)
	}
}

// TestVariantSharesName: a second entry of one name, type and role is a
// mistake when it repeats the first's key and expressions, and a variant
// when it differs in one (python-redis-lock before 3.3 in builtin_layouts.yaml).
func TestVariantSharesName(t *testing.T) {
	entry := "  - name: x\n    key: \"a:*\"\n    value: '[a-z]{8}'\n"
	if _, err := inspect.ParseLayouts("layouts.yaml", []byte("layouts:\n"+entry+entry)); err == nil || !strings.Contains(err.Error(), `name "x" is declared twice`) {
		t.Errorf("the same entry twice: error %v, want declared twice", err)
	}
	ds, err := inspect.ParseLayouts("layouts.yaml", []byte("layouts:\n"+entry+strings.Replace(entry, "[a-z]", "[0-9]", 1)))
	if err != nil || len(ds) != 2 {
		t.Errorf("a variant: %d layouts, error %v", len(ds), err)
	}
}

// TestDeclaredSharedHash: a team's own read/write lock declared with a
// mode field and a lease key per read holder gets the rules Redisson's
// has: each reader leased by its key (gone: expired), a writer alone, who
// may also read (issue 44: the built-in layouts are the same data).
func TestDeclaredSharedHash(t *testing.T) {
	ds, err := inspect.ParseLayouts("layouts.yaml", []byte(`layouts:
  - name: report-rw
    type: hash
    key: "reports:rw:*"
    field: '(?P<holder>[a-z]+-[0-9]+)/(?P<thread>[0-9]+)(?:/(?P<mode>write))?'
    mode_field: state
    read_lease: "{key}:lease:{field}"
`))
	must(t, err)
	opts := inspect.Options{Declared: inspect.Compile(ds)}
	c := client(t)
	k := "reports:rw:{" + redistest.Name(t) + "}"
	must(t, c.HSet(ctx, k, "state", "read", "worker-1/7", "1", "worker-2/3", "1").Err())
	must(t, c.PExpire(ctx, k, 30*time.Second).Err())
	must(t, c.Set(ctx, k+":lease:worker-1/7", "1", 20*time.Second).Err())
	l := readOne(t, c, k, opts)
	if l.Layout.Name != "report-rw" || l.Layout.Confidence != inspect.Certain || l.Holder.Mode != "read" || l.Holder.ClientID != "worker-1" || len(l.Holders) != 2 {
		t.Fatalf("readers: layout %+v holder %+v holders %+v", l.Layout, l.Holder, l.Holders)
	}
	if h := l.Holders[0]; h.Mode != "read" || h.TTLMS == nil || *h.TTLMS > 20000 || h.Expired || !l.Holders[1].Expired {
		t.Errorf("readers: holders %+v; want worker-1 leased by its key, worker-2 expired", l.Holders)
	}
	if inUse(l) != 1 || codes(l) != "STALE_HOLDERS:info,NO_FENCE:warning" {
		t.Errorf("readers: in use %d findings %s", inUse(l), codes(l))
	}
	must(t, c.HSet(ctx, k, "state", "write", "worker-1/7/write", "1").Err())
	must(t, c.Set(ctx, k+":lease:worker-2/3", "1", 20*time.Second).Err())
	if l := readOne(t, c, k, opts); !hasFinding(l, inspect.FindingOverAdmitted) || inUse(l) != 2 {
		t.Errorf("a writer and another reader: in use %d findings %s", inUse(l), codes(l))
	}
	must(t, c.HDel(ctx, k, "worker-2/3").Err())
	if l := readOne(t, c, k, opts); hasFinding(l, inspect.FindingOverAdmitted) || inUse(l) != 1 {
		t.Errorf("a writer with its own read: in use %d findings %s", inUse(l), codes(l))
	}
	must(t, c.HSet(ctx, k, "state", "shared").Err())
	if l := readOne(t, c, k, opts); l.Layout.Name == "report-rw" {
		t.Errorf("mode %q, neither read nor write: layout %+v", "shared", l.Layout)
	}
}
