package lockcore

import (
	"errors"
	"fmt"
	"strings"
)

// Key templates.
//
// Syntax: placeholders are {field} (the request field name, e.g. OrderId),
// {value} (its value, e.g. order-demo-001) and, in fence templates only,
// {key} (the built lock key) and {key%SUFFIX}: the lock key with SUFFIX cut
// off its end when it ends so (the shell's ${key%SUFFIX}), which names a
// sibling key: "{key%:Lease}:FencingToken" turns "App:{os}:Backup:Lease"
// into "App:{os}:Backup:FencingToken". A fence template without
// placeholders is one fixed key. A literal brace is doubled: "{{" and "}}".
// That is how a Redis Cluster hash tag is written: "lock:{field}:{{{value}}}"
// builds "lock:OrderId:{order-demo-001}".
//
// The fence counter key defaults to a key on the lock key's cluster slot
// (FenceKeyFor), so the acquire script can touch both keys in one call.
const (
	// DefaultKeyTemplate builds lock:OrderId:order-demo-001.
	DefaultKeyTemplate = "lock:{field}:{value}"
	// DefaultField is the request field name used when none is configured.
	DefaultField = "OrderId"
)

// ErrTemplate is wrapped by every template error.
var ErrTemplate = errors.New("bad key template")

// Template is a parsed key template.
type Template struct {
	src   string
	parts []part
}

type part struct {
	lit   string
	field string // placeholder name, empty for a literal
	trim  string // {key%trim}: the suffix cut off the key
}

// ParseTemplate parses a lock or fence key template. allowed lists the
// placeholders the template may use; required names the one it must use.
// Errors wrap ErrTemplate and name the template and what is accepted.
func ParseTemplate(src string, required string, allowed ...string) (*Template, error) {
	t := &Template{src: src}
	var lit strings.Builder
	seen := map[string]bool{}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '{' && i+1 < len(src) && src[i+1] == '{':
			lit.WriteByte('{')
			i++
		case c == '}' && i+1 < len(src) && src[i+1] == '}':
			lit.WriteByte('}')
			i++
		case c == '{':
			end := strings.IndexByte(src[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("%w %q: unclosed { at byte %d (write {{ for a literal brace)", ErrTemplate, src, i)
			}
			name, trim, _ := strings.Cut(src[i+1:i+end], "%")
			if name != "key" || trim == "" {
				name, trim = src[i+1:i+end], "" // only {key%SUFFIX} cuts a suffix
			}
			if !contains(allowed, name) {
				return nil, fmt.Errorf("%w %q: unknown placeholder {%s}; accepted: %s (write {{ }} for a literal hash-tag brace)", ErrTemplate, src, name, placeholders(allowed))
			}
			if lit.Len() > 0 {
				t.parts = append(t.parts, part{lit: lit.String()})
				lit.Reset()
			}
			t.parts = append(t.parts, part{field: name, trim: trim})
			seen[name] = true
			i += end
		case c == '}':
			return nil, fmt.Errorf("%w %q: stray } at byte %d (write }} for a literal brace)", ErrTemplate, src, i)
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, part{lit: lit.String()})
	}
	if required != "" && !seen[required] {
		return nil, fmt.Errorf("%w %q: it has no {%s} placeholder, so every %s would share one lock", ErrTemplate, src, required, required)
	}
	return t, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func placeholders(names []string) string {
	out := make([]string, 0, len(names)+1)
	for _, n := range names {
		out = append(out, "{"+n+"}")
		if n == "key" {
			out = append(out, "{key%SUFFIX}")
		}
	}
	return strings.Join(out, ", ")
}

// String returns the template as written.
func (t *Template) String() string { return t.src }

// Expand fills the placeholders from vars (missing names expand to "").
func (t *Template) Expand(vars map[string]string) string {
	var b strings.Builder
	for _, p := range t.parts {
		switch {
		case p.field == "":
			b.WriteString(p.lit)
		case p.trim != "":
			b.WriteString(strings.TrimSuffix(vars[p.field], p.trim))
		default:
			b.WriteString(vars[p.field])
		}
	}
	return b.String()
}

// Keys are the two Redis keys of one lock.
type Keys struct {
	// Lock holds "<fence>:<owner-token>" with a PX expiry.
	Lock string `json:"lock"`
	// Fence is the INCR counter that issues fencing tokens.
	Fence string `json:"fence"`
}

// KeySpec turns a business value into Keys: the template syntax is described
// at the top of this file.
type KeySpec struct {
	Field string
	lock  *Template
	fence *Template // nil: FenceKeyFor
}

// NewKeySpec parses the lock key template (must use {value}) and the optional
// fence template (may use {field}, {value}, {key}, {key%SUFFIX}, or none: a
// fixed key; "" = FenceKeyFor). With
// cluster set, it refuses templates whose lock and fence keys would land on
// different hash slots, naming both slots. Errors wrap ErrTemplate.
func NewKeySpec(field, keyTemplate, fenceTemplate string, cluster bool) (*KeySpec, error) {
	if field == "" {
		field = DefaultField
	}
	if keyTemplate == "" {
		keyTemplate = DefaultKeyTemplate
	}
	lt, err := ParseTemplate(keyTemplate, "value", "field", "value")
	if err != nil {
		return nil, err
	}
	ks := &KeySpec{Field: field, lock: lt}
	if fenceTemplate != "" {
		ft, err := ParseTemplate(fenceTemplate, "", "field", "value", "key")
		if err != nil {
			return nil, err
		}
		// A fixed key is accepted: one lock's counter named outright (the
		// seed platform's sibling keys); shared by several locks it still
		// issues increasing tokens, only faster.
		ks.fence = ft
		// The counter must outlive the lock: at the lock's own key the
		// acquire would INCR the lock and the release delete the counter,
		// and every holder would get fence 1.
		if k := ks.Keys("probe-value"); k.Lock == k.Fence {
			return nil, fmt.Errorf("%w %q: the fence counter would be the lock key itself (%q for value probe-value), so releasing the lock would delete the counter and every holder get fence 1; give the counter a key of its own, e.g. \"{key}:fence\"", ErrTemplate, fenceTemplate, k.Lock)
		}
	}
	if cluster {
		// A probe value shows whether the template keeps both keys on one slot.
		k := ks.Keys("probe-value")
		if a, b := Slot(k.Lock), Slot(k.Fence); a != b {
			return nil, fmt.Errorf("%w: lock key %q (slot %d) and fence key %q (slot %d) are on different cluster slots; put the value in a hash tag, e.g. \"lock:{field}:{{{value}}}\"", ErrTemplate, k.Lock, a, k.Fence, b)
		}
	}
	return ks, nil
}

// Fixed returns the key a template without placeholders always builds.
func (t *Template) Fixed() (string, bool) {
	for _, p := range t.parts {
		if p.field != "" {
			return "", false
		}
	}
	return t.Expand(nil), true
}

// MayBuild reports whether k can be an expansion of the template: equal to
// a fixed template, else starting with its literal text before the first
// placeholder and ending with its literal text after the last, one of
// them not empty ("{key}:fence" matches "a:fence"). inspect uses it to
// know a fence counter met on its own.
func (t *Template) MayBuild(k string) bool {
	if f, fixed := t.Fixed(); fixed {
		return k == f
	}
	var prefix, suffix string
	if p := t.parts[0]; p.field == "" {
		prefix = p.lit
	}
	if p := t.parts[len(t.parts)-1]; p.field == "" {
		suffix = p.lit
	}
	return prefix+suffix != "" && len(k) >= len(prefix)+len(suffix) && strings.HasPrefix(k, prefix) && strings.HasSuffix(k, suffix)
}

// Keys builds the lock and fence keys for one business value. An empty value
// is the caller's error to report; Keys does not refuse it. A value holding
// '{' or '}' can change the lock key's hash tag so that no fence key shares
// its slot (e.g. "a}b" with the default template); in a cluster the acquire
// script is then refused with CROSSSLOT (FuzzKeySpec's seed
// value_with_close_brace).
func (ks *KeySpec) Keys(value string) Keys {
	vars := map[string]string{"field": ks.Field, "value": value}
	k := Keys{Lock: ks.lock.Expand(vars)}
	if ks.fence == nil {
		k.Fence = FenceKeyFor(k.Lock)
	} else {
		vars["key"] = k.Lock
		k.Fence = ks.fence.Expand(vars)
	}
	return k
}

// ErrCrossSlot is wrapped by SameSlot's error.
var ErrCrossSlot = errors.New("lock and fence keys on different cluster slots")

// SameSlot returns nil when the lock and fence keys hash to one Redis Cluster
// slot, as the acquire script needs (it touches both keys; a cluster refuses
// a script over two slots with CROSSSLOT: Redis Cluster specification,
// "Hash tags"). Otherwise it returns an error wrapping ErrCrossSlot that
// names both keys and their slots (0-16383).
func (k Keys) SameSlot() error {
	if a, b := Slot(k.Lock), Slot(k.Fence); a != b {
		return fmt.Errorf("%w: lock key %q is on slot %d, fence key %q on slot %d", ErrCrossSlot, k.Lock, a, k.Fence, b)
	}
	return nil
}

// FenceKeyFor returns the default fence counter key for a lock key, on the
// same cluster slot: "<key>:fence" when the key has a hash tag of its own,
// else "{<key>}:fence" (the whole lock key becomes the hash tag).
func FenceKeyFor(lockKey string) string {
	if strings.ContainsAny(lockKey, "{}") {
		return lockKey + ":fence"
	}
	return "{" + lockKey + "}:fence"
}
