package inspect

import "strings"

// companionEntries are, for each layout of ds, an entry with a role for
// each companion its key template names (docs/layouts.md, "Companions are
// known by name"): a key there is that layout's companion whether or not
// the lock exists now, as a fence counter outlives the lock it counts for.
// The same for the user's layouts and the built-in ones (Compile).
func companionEntries(ds []Declared) []Declared {
	var out []Declared
	for _, d := range ds {
		if d.Role != "" {
			continue // a companion's companions are its evidence (a queue's meta), not keys it names
		}
		for _, c := range d.Companions {
			glob, ok := companionGlob(c.Key, d.Key)
			if !ok {
				continue
			}
			t := c.Type
			if c.Role == RoleFence || c.Value != "" {
				t = "string" // an INCR counter, or a value to match
			}
			out = append(out, Declared{Name: d.Name, Library: d.Library, Type: t, Key: glob, Value: c.Value, Role: c.Role, Confidence: Certain, byName: true})
		}
	}
	return out
}

// companionGlob is the glob of the keys a companion template names beside
// the locks of lockGlob: the lock's glob for {key}, each run's * for {1}..;
// ok is false for a template that names no key of its own (one that uses
// {value}, unknown from the companion's name, or {fence_key}, or whose glob begins and
// ends with a glob: "{1}", "{1}:{2}:{3}" would take in most keys).
func companionGlob(tmpl, lockGlob string) (string, bool) {
	if strings.Contains(tmpl, "{value}") || strings.Contains(tmpl, "{fence_key}") {
		return "", false // the configured fence counters are known by IsFenceKey (companionOf)
	}
	tagged := "{" + lockGlob + "}"
	if strings.Contains(lockGlob, "{") || strings.HasPrefix(lockGlob, "*") && strings.HasSuffix(lockGlob, "*") {
		tagged = lockGlob // a key with its own hash tag is its tagged form; * at both ends takes in the braces
	}
	// A glob matches its own text: expanded as if it were the lock key,
	// each {n} takes the n-th * of the glob.
	m := declaredMatch{layout: &Declared{keyParts: strings.Split(lockGlob, "*")}}
	glob := m.expand(strings.ReplaceAll(tmpl, "{tagged_key}", tagged), lockGlob, Value{})
	fixed := func(b byte) bool { return b != '*' && b != '?' }
	if glob == "" || glob == lockGlob || !fixed(glob[0]) && !fixed(glob[len(glob)-1]) {
		return "", false
	}
	return glob, true
}

// companionByName reports whether v can be the companion d names by key:
// of its type, its value matching the companion's expression, and a
// counter INCR can raise for a fence counter.
func (d *Declared) companionByName(v Value) bool {
	if d.Type != "" && d.Type != v.Type || d.value != nil && (v.Truncated || !d.value.Match(v.Bytes)) {
		return false
	}
	if d.Role == RoleFence {
		_, isInt := incrInt(v.Bytes)
		return isInt && !v.Truncated
	}
	return true
}
