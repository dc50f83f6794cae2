package lockcore

import (
	"errors"
	"strings"
	"testing"
)

// cases.md 9: slots checked on a real cluster.
func TestSlotCases(t *testing.T) {
	cases := map[string]int{
		"lock:resource":                     3196,
		"lock-signal:resource":              835,
		"lock:{resource}":                   10348,
		"lock-signal:{resource}":            10348,
		"{lock}resource":                    8718,
		"{lock-signal}resource":             11570,
		"{Test}:mam8CQJFrTYBEXbcsVKVNA:key": 11336,
		"redisson_rwlock__{{Test}:mam8CQJFrTYBEXbcsVKVNA:key}": 7473,
		"lock:OrderId:order-demo-001":                          823,
		"lock:OrderId:order-demo-001:fence":                    8074,
	}
	for k, want := range cases {
		if got := Slot(k); got != want {
			t.Errorf("Slot(%q) = %d, want %d", k, got, want)
		}
	}
	if HashTag("redisson_rwlock__{{Test}:x}") != "{Test" {
		t.Errorf("first-{ rule: tag %q", HashTag("redisson_rwlock__{{Test}:x}"))
	}
	if HashTag("a{}b") != "a{}b" {
		t.Error("empty tag must hash the whole key")
	}
}

func TestKeySpecDefault(t *testing.T) {
	ks, err := NewKeySpec("", "", "", true)
	if err != nil {
		t.Fatal(err)
	}
	k := ks.Keys("order-demo-001")
	if k.Lock != "lock:OrderId:order-demo-001" || k.Fence != "{lock:OrderId:order-demo-001}:fence" {
		t.Fatalf("keys %+v", k)
	}
	if Slot(k.Lock) != Slot(k.Fence) {
		t.Errorf("default lock and fence on slots %d and %d", Slot(k.Lock), Slot(k.Fence))
	}
}

func TestKeySpecHashTag(t *testing.T) {
	ks, err := NewKeySpec("OrderId", "lock:{field}:{{{value}}}", "", true)
	if err != nil {
		t.Fatal(err)
	}
	k := ks.Keys("order-demo-001")
	if k.Lock != "lock:OrderId:{order-demo-001}" || k.Fence != "lock:OrderId:{order-demo-001}:fence" {
		t.Fatalf("keys %+v", k)
	}
	if Slot(k.Lock) != Slot(k.Fence) {
		t.Error("hash-tagged keys on different slots")
	}
}

func TestKeySpecRejects(t *testing.T) {
	cases := map[[2]string]string{
		{"lock:{field}", ""}:                    "no {value} placeholder",
		{"lock:{id}:{value}", ""}:               "unknown placeholder {id}",
		{"lock:{value", ""}:                     "unclosed {",
		{"lock:}{value}", ""}:                   "stray }",
		{"lock:{value}", "{key}:fence:{bogus}"}: "unknown placeholder {bogus}",
		{"lock:{value}", "{key}"}:               "the fence counter would be the lock key itself",
		{"lock:{value}", "lock:{value}"}:        "the fence counter would be the lock key itself",
	}
	for in, want := range cases {
		_, err := NewKeySpec("OrderId", in[0], in[1], false)
		if err == nil || !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q/%q: %v, want %q", in[0], in[1], err, want)
		}
	}
}

// TestFenceTemplateSiblingAndFixed: the seed platform keeps its counter at a
// sibling of the lock key (…:Lease → …:FencingToken) or at a fixed key;
// both are fence templates, and MayBuild knows the counters they build.
func TestFenceTemplateSiblingAndFixed(t *testing.T) {
	cases := []struct{ fence, value, wantFence string }{
		{"{key%:Lease}:FencingToken", "Microi:{os}:DatabaseBackup:Lease", "Microi:{os}:DatabaseBackup:FencingToken"},
		{"{key%:Lease}:FencingToken", "other", "other:FencingToken"}, // no suffix to cut: the key as is
		{"Microi:{{os}}:DatabaseBackup:FencingToken", "Microi:{os}:DatabaseBackup:Lease", "Microi:{os}:DatabaseBackup:FencingToken"},
		{"fence:{field}", "x", "fence:OrderId"},
	}
	for _, c := range cases {
		ks, err := NewKeySpec("OrderId", "{value}", c.fence, false)
		if err != nil {
			t.Fatalf("%q: %v", c.fence, err)
		}
		k := ks.Keys(c.value)
		if k.Lock != c.value || k.Fence != c.wantFence {
			t.Errorf("%q on %q: %+v, want fence %q", c.fence, c.value, k, c.wantFence)
		}
		if !ks.fence.MayBuild(k.Fence) || ks.fence.MayBuild(k.Lock) && c.value != "other" {
			t.Errorf("%q: MayBuild(%q) = %v, MayBuild(%q) = %v", c.fence, k.Fence, ks.fence.MayBuild(k.Fence), k.Lock, ks.fence.MayBuild(k.Lock))
		}
	}
	if _, err := NewKeySpec("OrderId", "Microi:{{os}}:{value}:Lease", "{key%:Lease}:FencingToken", true); err != nil {
		t.Errorf("a sibling in the same hash tag is fine in a cluster: %v", err)
	}
	if _, err := ParseTemplate("lock:{value%x}", "value", "field", "value"); err == nil || !strings.Contains(err.Error(), "unknown placeholder {value%x}") {
		t.Errorf("only {key%%SUFFIX} cuts a suffix: %v", err)
	}
}

// cases.md 9: a template that splits lock and fence is refused in cluster, naming both slots.
func TestKeySpecClusterCrossSlot(t *testing.T) {
	_, err := NewKeySpec("OrderId", "lock:{field}:{value}", "{key}:fence", true)
	if err == nil {
		t.Fatal("cross-slot template accepted in cluster mode")
	}
	if !strings.Contains(err.Error(), "different cluster slots") || !strings.Contains(err.Error(), "slot") {
		t.Errorf("error %v", err)
	}
	if _, err := NewKeySpec("OrderId", "lock:{field}:{value}", "{key}:fence", false); err != nil {
		t.Errorf("outside cluster the template is fine: %v", err)
	}
}

// TestKeysSameSlot: a brace in the value can split the default templates'
// keys ("a}b": 7409 vs 10768); a hash-tag template keeps them together.
func TestKeysSameSlot(t *testing.T) {
	def, err := NewKeySpec("", "", "", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := def.Keys("order-demo-001").SameSlot(); err != nil {
		t.Errorf("order-demo-001: %v", err)
	}
	err = def.Keys("a}b").SameSlot()
	if !errors.Is(err, ErrCrossSlot) || !strings.Contains(err.Error(), "slot 7409") || !strings.Contains(err.Error(), "slot 10768") {
		t.Errorf("a}b: %v", err)
	}
	tagged, err := NewKeySpec("", "lock:{field}:{{{value}}}", "", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := tagged.Keys("a}b").SameSlot(); err != nil {
		t.Errorf("a}b with a hash tag template: %v", err)
	}
}

func TestParseValue(t *testing.T) {
	f, o, err := ParseValue("34:0123456789abcdef0123456789abcdef")
	if err != nil || f != 34 || o != "0123456789abcdef0123456789abcdef" {
		t.Errorf("got %d %q %v", f, o, err)
	}
	for _, bad := range []string{"1", "lock", "x:y", "-1:a", "5:"} {
		if _, _, err := ParseValue(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if tok := NewOwnerToken(); len(tok) != 32 || tok == NewOwnerToken() {
		t.Errorf("token %q", tok)
	}
}
