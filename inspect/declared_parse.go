package inspect

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/yamlschema"
)

// declaredGroups are the named groups a declared value, field, field
// value or member expression may have (docs/layouts.md, "Layouts you declare").
var declaredGroups = []string{"owner", "fence", "holder", "acquired_at", "expires_at", "host", "pid", "thread", "job_id", "metadata", "count", "mode"}

// declaredRoles are the companion roles a declared layout may name.
var declaredRoles = []string{RoleFence, RoleSignal, RoleQueue, RoleTimeout, RoleOwner, RoleExpire, RoleJob, RoleJobQueue, RoleProbe, RoleCounter, RoleDigest, RolePermits, RolePermitTimeouts, RoleReadLease}

// declaredTypes are the Redis types a declared layout may describe; a
// stream (whose entries lockctl does not read) or "any" type is a role
// layout's only: a companion known by its name and required companions.
var declaredTypes = []string{"string", "hash", "zset", "list", "set", "stream", "any"}

// companionTypes are the types a companion may be required to have.
var companionTypes = declaredTypes[:len(declaredTypes)-1]

// declaredFields are the fields of a layouts file entry, sorted.
var declaredFields = []string{"acquired_within", "companions", "confidence", "expiry", "fence", "field", "field_value", "job_id", "key", "lease", "library", "member", "member_evidence", "mode_field", "name", "owner_hex", "read_lease", "role", "score", "size", "type", "unit", "unleased_score", "value", "write_member"}

// companionFields are the fields of a companion, sorted.
var companionFields = []string{"key", "optional", "required", "role", "type", "value"}

// layoutsLimits bound a layouts file: it is small and written by hand.
var layoutsLimits = yamlschema.Limits{MaxValues: 20000, MaxDepth: 8}

// ParseLayouts reads a layouts file (YAML: "layouts:", a list of mappings,
// docs/layouts.md "Layouts you declare") and returns its layouts, checked.
// The error has one line per mistake, "path:LINE: layouts[i]: what is
// wrong, the value and what is accepted", in the file's order.
func ParseLayouts(path string, data []byte) ([]Declared, error) {
	return parseLayouts(path, data, false)
}

// parseLayouts is ParseLayouts; builtin lets the entries take the built-in
// layouts' names (the embedded builtin_layouts.yaml).
func parseLayouts(path string, data []byte, builtin bool) ([]Declared, error) {
	doc, err := yamlschema.Parse(data, layoutsLimits)
	var syn *yamlschema.SyntaxError
	var ps yamlschema.Problems
	switch {
	case errors.Is(err, yamlschema.ErrEmpty):
		return nil, nil
	case errors.As(err, &syn):
		return nil, fmt.Errorf("%s:%d: %s", path, syn.Line, syn.Msg)
	case errors.As(err, &ps):
		return nil, parseProblems(path, ps)
	case err != nil:
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	top, ok := doc.Value.(map[string]any)
	list, isList := top["layouts"].([]any)
	if !ok || !isList || len(top) != 1 {
		return nil, fmt.Errorf("%s:1: want a mapping with one key, layouts: a list of layouts", path)
	}
	var out []Declared
	var errs []string
	for i, item := range list {
		p := yamlschema.Path{"layouts", strconv.Itoa(i)}
		bad := func(field string, err error) {
			line := doc.Line(p)
			if field != "" {
				line = doc.Line(append(slices.Clone(p), field))
			}
			errs = append(errs, fmt.Sprintf("%s:%d: layouts[%d]: %v", path, line, i, err))
		}
		d, problems := declaredOf(item)
		for _, pr := range problems {
			bad(pr.field, pr.err)
		}
		if len(problems) > 0 {
			continue
		}
		if field, err := checkDeclared(d, out, builtin); err != nil {
			bad(field, err)
			continue
		}
		out = append(out, d.perGlob()...)
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "\n"))
	}
	return out, nil
}

// parseProblems words what yamlschema.Parse found wrong with the YAML
// itself, one "path:LINE: [field: ]what" line each, as the entries' mistakes.
func parseProblems(path string, ps yamlschema.Problems) error {
	lines := make([]string, 0, len(ps))
	for _, p := range ps {
		msg, ok := p.ParseMessage("list of layouts", layoutsLimits)
		if !ok {
			msg = p.Keyword
		}
		if f := p.Field(); f != "" && p.Keyword != "size" {
			msg = f + ": " + msg
		}
		lines = append(lines, fmt.Sprintf("%s:%d: %s", path, p.Line, msg))
	}
	return errors.New(strings.Join(lines, "\n"))
}

// fieldError is one mistake in an entry and the field it is at ("" the entry).
type fieldError struct {
	field string
	err   error
}

// declaredOf converts one list item; unknown fields and wrong kinds are
// mistakes, each reported.
func declaredOf(item any) (Declared, []fieldError) {
	m, ok := item.(map[string]any)
	if !ok {
		return Declared{}, []fieldError{{"", fmt.Errorf("is %s; want a mapping with name, key, value", got(item))}}
	}
	d := Declared{Type: "string", Confidence: Certain}
	var errs []fieldError
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := d.set(k, m[k]); err != nil {
			errs = append(errs, fieldError{k, err})
		}
	}
	return d, errs
}

// set stores one field of an entry.
func (d *Declared) set(k string, v any) error {
	texts := map[string]*string{"name": &d.Name, "library": &d.Library, "value": &d.Value,
		"field": &d.Field, "field_value": &d.FieldValue, "member": &d.Member, "job_id": &d.JobID,
		"write_member": &d.WriteMember, "member_evidence": &d.MemberEvidence, "mode_field": &d.ModeField, "read_lease": &d.ReadLease}
	if dst, ok := texts[k]; ok {
		s, isText := v.(string)
		if !isText {
			return fmt.Errorf("%s is %s; want text", k, got(v))
		}
		*dst = s
		return nil
	}
	switch k {
	case "key":
		return d.setKeys(v)
	case "type":
		return oneOf(k, v, declaredTypes, &d.Type)
	case "role":
		return oneOf(k, v, declaredRoles, &d.Role)
	case "score":
		return oneOf(k, v, []string{"deadline", "acquired"}, &d.Score)
	case "unit":
		return oneOf(k, v, []string{"ms", "s"}, &d.Unit)
	case "acquired_within":
		text, _ := v.(string)
		within, err := time.ParseDuration(text)
		if err != nil || within <= 0 {
			return fmt.Errorf("acquired_within is %s; want a duration such as 24h or 90m", got(v))
		}
		d.AcquiredWithin = within
	case "lease":
		var from string
		err := oneOf(k, v, []string{"key"}, &from)
		d.LeaseFromKey = from == "key"
		return err
	case "expiry":
		var where string
		err := oneOf(k, v, []string{"key", "value"}, &where)
		d.ValueExpiry = where == "value"
		return err
	case "confidence":
		var c string
		err := oneOf(k, v, []string{string(Certain), string(Likely), string(Guess)}, &c)
		d.Confidence = Confidence(c)
		return err
	case "size":
		n, ok := v.(int64)
		if !ok || n < 1 || n > DefaultMaxValueBytes {
			return fmt.Errorf("size is %s; want the value's length in bytes, a whole number from 1 to %d", got(v), DefaultMaxValueBytes)
		}
		d.Size = int(n)
	case "fence", "owner_hex":
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("%s is %s; want true or false", k, got(v))
		}
		d.IssuesFence = d.IssuesFence || k == "fence" && b
		d.OwnerHex = d.OwnerHex || k == "owner_hex" && b
	case "unleased_score":
		n, ok := v.(int64)
		if !ok || n <= 0 {
			return fmt.Errorf("unleased_score is %s; want the score of a holder without a lease, a whole number above 0", got(v))
		}
		d.UnleasedScore = float64(n)
	case "companions":
		cs, err := declaredCompanions(v)
		d.Companions = cs
		return err
	default:
		return fmt.Errorf("unknown field %s; accepted: %s", k, strings.Join(declaredFields, ", "))
	}
	return nil
}

// oneOf stores v in dst when it is one of accepted.
func oneOf(k string, v any, accepted []string, dst *string) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("%s is %s; accepted: %s", k, got(v), strings.Join(accepted, ", "))
	}
	if !slices.Contains(accepted, s) {
		return fmt.Errorf("%s %q; accepted: %s", k, s, strings.Join(accepted, ", "))
	}
	*dst = s
	return nil
}

// got shows a value from the file in YAML words: "x" (a string), 5 (a
// whole number), a list, a mapping, null (yamlschema.Problem.Got).
func got(v any) string { return yamlschema.Problem{Value: v}.Got() }

// missingFields names the empty ones of fields (name, value, name,
// value...): "key is missing", "name and key are missing"; "" when none is.
func missingFields(fields ...string) string {
	var missing []string
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] == "" {
			missing = append(missing, fields[i])
		}
	}
	switch len(missing) {
	case 0:
		return ""
	case 1:
		return missing[0] + " is missing"
	}
	return strings.Join(missing, " and ") + " are missing"
}

// reProblem is what is wrong with an expression, without the expression
// (Go's error quotes it): "missing closing ]".
func reProblem(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return err.Error()
}

// setKeys stores key: one glob, or a list of globs for keys that differ
// only in name (a queue's "active", "wait", "meta"...).
func (d *Declared) setKeys(v any) error {
	if s, ok := v.(string); ok {
		d.Key = s
		return nil
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return fmt.Errorf("key is %s; want a glob (text) or a list of globs", got(v))
	}
	for i, it := range list {
		s, ok := it.(string)
		if !ok || s == "" {
			return fmt.Errorf("key[%d] is %s; want a glob (text)", i, got(it))
		}
		d.moreKeys = append(d.moreKeys, s)
	}
	d.Key, d.moreKeys = d.moreKeys[0], d.moreKeys[1:]
	return nil
}

// globs are the entry's key globs: Key, then the rest of a key list.
func (d *Declared) globs() []string { return append([]string{d.Key}, d.moreKeys...) }

// perGlob is the entry once per glob of its key list, each with one Key.
func (d Declared) perGlob() []Declared {
	out := make([]Declared, 0, 1+len(d.moreKeys))
	for _, glob := range d.globs() {
		e := d
		e.Key, e.moreKeys = glob, nil
		out = append(out, e)
	}
	return out
}

func declaredCompanions(v any) ([]DeclaredCompanion, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("companions is %s; want a list of mappings with role and key", got(v))
	}
	var out []DeclaredCompanion
	for j, it := range list {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("companions[%d] is %s; want a mapping with role and key", j, got(it))
		}
		role, _ := m["role"].(string)
		key, _ := m["key"].(string)
		if missing := missingFields("role", role, "key", key); missing != "" {
			return nil, fmt.Errorf("companions[%d]: %s; want a mapping with role and key (text)", j, missing)
		}
		c := DeclaredCompanion{Role: role, Key: key}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			var err error
			var isText bool
			switch k {
			case "role":
				err = oneOf(fmt.Sprintf("companions[%d]: role", j), role, declaredRoles, &c.Role)
			case "key":
			case "value":
				if c.Value, isText = m[k].(string); !isText || c.Value == "" {
					err = fmt.Errorf("companions[%d]: value is %s; want a regular expression (text)", j, got(m[k]))
				}
			case "type":
				err = oneOf(fmt.Sprintf("companions[%d]: type", j), m[k], companionTypes, &c.Type)
			case "optional", "required":
				b, isBool := m[k].(bool)
				if !isBool {
					err = fmt.Errorf("companions[%d]: %s is %s; want true or false", j, k, got(m[k]))
				}
				c.Optional = c.Optional || k == "optional" && b
				c.Required = c.Required || k == "required" && b
			default:
				err = fmt.Errorf("companions[%d]: unknown field %s; accepted: %s", j, k, strings.Join(companionFields, ", "))
			}
			if err != nil {
				return nil, err
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// checkDeclared validates d against the layouts before it, returning the
// field at fault ("" the entry) and what is wrong.
func checkDeclared(d Declared, before []Declared, builtin bool) (string, error) {
	switch {
	case d.Name == "" || d.Key == "":
		return "", fmt.Errorf("%s; name and key are required", missingFields("name", d.Name, "key", d.Key))
	case !builtin && (slices.ContainsFunc(Layouts, func(l LayoutInfo) bool { return l.Name == d.Name }) || d.Name == "unknown"):
		return "name", fmt.Errorf("name %q is a built-in layout's; choose another", d.Name)
	case slices.ContainsFunc(before, d.sameAs):
		return "name", fmt.Errorf("name %q is declared twice for type %s%s with the same key and expressions; a variant differs in one of them", d.Name, d.Type, roleWords(d.Role))
	case d.byNameOnly() && d.Role == "":
		return "type", fmt.Errorf("type %s needs a role: only a companion (a queue's keys, say) is known by its name alone", d.Type)
	}
	for _, glob := range d.globs() {
		if strings.ContainsAny(glob, "[]\\") {
			return "key", fmt.Errorf("key %q: only * and ? are globs here; [ ] and \\ are not accepted", glob)
		}
	}
	if field, err := checkTypeFields(d); err != nil {
		return field, err
	}
	exprs := map[string]string{"value": d.Value, "field": d.Field, "field_value": d.FieldValue, "member": d.Member, "member_evidence": d.MemberEvidence}
	for _, field := range slices.Sorted(maps.Keys(exprs)) {
		if err := checkExpr(field, exprs[field]); err != nil {
			return field, err
		}
	}
	expiresAt := hasGroup(d.Value, "expires_at")
	for j, c := range d.Companions {
		if c.Value != "" && c.Type != "" && c.Type != "string" {
			return "companions", fmt.Errorf("companions[%d]: value needs type string (a value to read), not %s", j, c.Type)
		}
		if err := checkExpr(fmt.Sprintf("companions[%d]: value", j), c.Value); err != nil {
			return "companions", err
		}
		expiresAt = expiresAt || hasGroup(c.Value, "expires_at")
	}
	hasCounter := slices.ContainsFunc(d.Companions, func(c DeclaredCompanion) bool { return c.Role == RoleFence })
	switch {
	case d.IssuesFence && !hasCounter:
		return "fence", fmt.Errorf("fence: true needs a companion with role %s (the counter)", RoleFence)
	case d.LeaseFromKey && d.Score != "acquired":
		return "lease", fmt.Errorf("lease: key needs score: acquired (the lease runs from each member's acquire time)")
	case d.AcquiredWithin > 0 && (d.Type != "string" || !hasGroup(d.Value, "acquired_at")):
		return "acquired_within", fmt.Errorf("acquired_within needs a string layout with an acquired_at group in its value")
	case d.ValueExpiry && (d.Type != "string" || !expiresAt):
		return "expiry", fmt.Errorf("expiry: value needs a string layout with an expires_at group in its value or a companion's value")
	case d.ReadLease != "" && d.ModeField == "":
		return "read_lease", fmt.Errorf("read_lease needs mode_field (the field that says the lock is read or write)")
	case strings.Contains(d.ReadLease, "{count}") && !hasGroup(d.Field, "count") && !hasGroup(d.FieldValue, "count"):
		return "read_lease", fmt.Errorf("read_lease %q names {count}, which needs a count group in field or field_value", d.ReadLease)
	}
	return "", nil
}

// hasGroup reports whether expr (checked, or "") has a group named name.
func hasGroup(expr, name string) bool {
	re, err := regexp.Compile(expr)
	return err == nil && expr != "" && re.SubexpIndex(name) >= 0
}

// checkExpr checks one expression of an entry (field names it): RE2, whole
// when anchored, with only the named groups of declaredGroups; "" is none.
func checkExpr(field, expr string) error {
	if expr == "" {
		return nil
	}
	if _, err := regexp.Compile(expr); err != nil {
		return fmt.Errorf("%s %q is no regular expression (%s); accepted: RE2 syntax, https://github.com/google/re2/wiki/Syntax", field, expr, reProblem(err))
	}
	re, err := regexp.Compile(`^(?:` + expr + `)$`)
	if err != nil { // the expression alone compiled: only a stray ")" can end the group early
		return fmt.Errorf("%s %q is no regular expression (unexpected )); accepted: RE2 syntax, https://github.com/google/re2/wiki/Syntax", field, expr)
	}
	for _, g := range re.SubexpNames()[1:] {
		if g != "" && !slices.Contains(declaredGroups, g) {
			return fmt.Errorf("%s: named group %q; accepted: %s", field, g, strings.Join(declaredGroups, ", "))
		}
	}
	return nil
}

// sameAs reports an entry d repeats: name, type, role, key and
// expressions alike (variants of one layout differ in one of these).
func (d Declared) sameAs(o Declared) bool {
	return o.Name == d.Name && o.Type == d.Type && o.Role == d.Role && o.Key == d.Key && o.Value == d.Value &&
		o.Field == d.Field && o.FieldValue == d.FieldValue && o.Member == d.Member && o.ModeField == d.ModeField
}

// roleWords is " and role R", or "" for a lock's own layout.
func roleWords(role string) string {
	if role == "" {
		return ""
	}
	return " and role " + role
}

// typeFields are the fields that describe the value of each type: those
// it needs, then those it may have.
var typeFields = map[string][2][]string{
	"string": {{"value"}, {"size"}},
	"hash":   {{"field"}, {"field_value", "mode_field", "read_lease"}},
	"zset":   {{"member", "score", "unit"}, {"lease", "member_evidence", "owner_hex", "size", "unleased_score", "write_member"}},
	"list":   {{"member"}, {"member_evidence", "owner_hex", "size"}},
	"set":    {{"member"}, {"member_evidence", "owner_hex", "size"}},
	"stream": {nil, nil},
	"any":    {nil, nil},
}

// checkTypeFields checks that d has the fields of its type and none of another's.
func checkTypeFields(d Declared) (string, error) {
	set := map[string]bool{"value": d.Value != "", "size": d.Size > 0, "field": d.Field != "", "field_value": d.FieldValue != "",
		"member": d.Member != "", "score": d.Score != "", "unit": d.Unit != "",
		"lease": d.LeaseFromKey, "member_evidence": d.MemberEvidence != "", "write_member": d.WriteMember != "",
		"owner_hex": d.OwnerHex, "unleased_score": d.UnleasedScore != 0, "mode_field": d.ModeField != "", "read_lease": d.ReadLease != ""}
	tf := typeFields[d.Type]
	for _, f := range tf[0] {
		if !set[f] {
			return "", fmt.Errorf("type %s needs %s (%s)", d.Type, f, strings.Join(tf[0], ", "))
		}
	}
	for _, f := range slices.Sorted(maps.Keys(set)) {
		if set[f] && !slices.Contains(tf[0], f) && !slices.Contains(tf[1], f) {
			return f, fmt.Errorf("%s is not a field of type %s; it takes %s", f, d.Type, strings.Join(append(slices.Clone(tf[0]), tf[1]...), ", "))
		}
	}
	return "", nil
}
