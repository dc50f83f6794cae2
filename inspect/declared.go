package inspect

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lockctl/lockctl/lockcore"
)

// Declared is a lock layout described as data (docs/layouts.md, "Layouts
// you declare"): a team's own lock or a library lockctl lacks, from the
// user's layouts file, and the built-in layouts of builtin_layouts.yaml.
// A key matching Key whose value matches the type's expressions gets this
// layout; the user's are tried first, then the built-in ones, in order.
type Declared struct {
	// Name is the layout name inspect reports; Library says whose it is.
	Name, Library string
	// Type is the Redis type of the key: string, hash, zset, list or set;
	// for a role layout also stream or any (matched by key alone).
	Type string
	// Key is a glob over the whole key: * any run of bytes (captured, {1}
	// to {9} in templates, the longest run first), ? one byte. A file's
	// list of globs becomes one entry per glob.
	Key string
	// Value (string) is a regular expression (RE2) over the whole value,
	// with named groups among declaredGroups; Size, when not 0, the
	// value's (or each member's) length in bytes.
	Value string
	Size  int
	// Field and FieldValue (hash) match every field's name and value: each
	// field is a holder, the first one the owner.
	Field, FieldValue string
	// ModeField (hash), when set, is a field that holds the lock's mode,
	// read or write, and no holder: a shared lock, each holder reading
	// unless its field's mode group says write (Redisson's RReadWriteLock).
	ModeField string
	// ReadLease (hash with ModeField) is a template of the key whose TTL is
	// a read holder's lease ({field} the holder's field, {count} its count
	// group); a write holder's lease is the lock key's own.
	ReadLease string
	// Member (zset, list, set) matches every member: each is a holder,
	// members with the same owner group folded into one with its permits.
	Member string
	// Score (zset) says what a member's score is: "deadline" (its lease
	// ends then: the key needs no TTL) or "acquired"; Unit "ms" or "s".
	Score, Unit string
	// Role, when set, says a key of this layout is itself a companion of
	// a lock (a fence counter, a signal list): no holder, no findings.
	Role string
	// JobID is a template for the holder's job id ({1}, {value}...).
	JobID string
	// Confidence is the most a match gets: certain by default, likely when
	// a companion the layout always writes is missing.
	Confidence Confidence
	// IssuesFence says the layout issues fencing tokens: a fence_counter
	// companion is its counter, the value's fence group its token.
	IssuesFence bool
	// ValueExpiry says the lease's end is kept in a value (an expires_at
	// group of the value or a companion's), not in a Redis TTL: no TTL is
	// then by design (redis-lock-gem).
	ValueExpiry bool
	// LeaseFromKey (zset scored by acquire time) says each holder's lease
	// is the key's expiry minus the newest score: the library PEXPIREs the
	// key by its lease at each acquire or refresh (redis-semaphore).
	LeaseFromKey bool
	// WriteMember (zset) is a member that marks a write lock, no holder:
	// the holder with its score writes, the others read (Symfony Lock).
	WriteMember string
	// OwnerHex (zset, list, set) says the library hands a member out as the
	// hex of its bytes (Redisson's permit ids): holders show it, --owner
	// matches it.
	OwnerHex bool
	// UnleasedScore (zset scored by deadline), when not 0, is the score of
	// a holder without a lease (Redisson's nonExpirableTimeout).
	UnleasedScore float64
	// MemberEvidence (zset, list, set) is an expression only this layout's
	// members match: with one member matching it the match is certain,
	// else at most Confidence.
	MemberEvidence string
	// AcquiredWithin, when not 0, is how near the read the value's
	// acquired_at time must be for the layout to match: a random token can
	// have a time's shape (a UUIDv1's, one in 64) with any time in it.
	AcquiredWithin time.Duration
	// Companions are keys the layout keeps beside the lock.
	Companions []DeclaredCompanion

	value, field, fieldValue, member, memberEvidence *regexp.Regexp
	valueBounds                                      byteBounds // of Value, checked before it runs
	keyParts                                         []string   // Key split at its stars
	moreKeys                                         []string   // the rest of a file's key list, until perGlob
	// byName marks an entry companionEntries made from a companion's key
	// template: matched by key and type alone (companionByName).
	byName bool
	// fenceGroup says a fencing layout's value has a fence group (a token).
	fenceGroup bool
}

// DeclaredCompanion is one companion key of a declared layout. Key is a
// template: {key} the lock key, {tagged_key} the lock key in a hash tag
// unless it has one, {value} the lock's string value, {1}.. the key's
// glob runs. Type is the type it must have to count as there ("" any);
// Value, when set, an expression its string value must match, whose named
// groups fill what the lock's own left empty; an Optional one is listed
// only when it exists; when some are Required, the layout matches only if
// one of those exists.
type DeclaredCompanion struct {
	Role, Key, Type, Value string
	Optional, Required     bool

	value *regexp.Regexp
}

// there reports whether cv, read at the companion's key, counts as the
// companion: it exists, of its type, and its value matches.
func (c DeclaredCompanion) there(cv Value) bool {
	return cv.Exists() && (c.Type == "" || cv.Type == c.Type) && (c.value == nil || !cv.Truncated && c.value.Match(cv.Bytes))
}

// compiled returns d with its expressions built.
func (d Declared) compiled() Declared {
	re := func(expr string) *regexp.Regexp {
		if expr == "" {
			return nil
		}
		return regexp.MustCompile(`^(?:` + expr + `)$`)
	}
	d.value, d.field, d.fieldValue, d.member = re(d.Value), re(d.Field), re(d.FieldValue), re(d.Member)
	d.memberEvidence = re(d.MemberEvidence)
	d.valueBounds = boundsOf(d.Value)
	d.Companions = slices.Clone(d.Companions) // entries of one file's key list share the slice
	for i := range d.Companions {
		d.Companions[i].value = re(d.Companions[i].Value)
	}
	d.keyParts = strings.Split(d.Key, "*")
	d.fenceGroup = d.IssuesFence && d.value != nil && d.value.SubexpIndex("fence") >= 0
	if d.Confidence == "" {
		d.Confidence = Certain
	}
	if d.Type == "" && !d.byName {
		d.Type = "string"
	}
	return d
}

// Compile builds the expressions of layouts ParseLayouts returned, once,
// before they go into Options.Declared; the entries for the companions
// their templates name come first (companionEntries).
func Compile(ds []Declared) []Declared {
	all := append(companionEntries(ds), ds...)
	out := make([]Declared, len(all))
	for i, d := range all {
		out[i] = d.compiled()
	}
	return out
}

// declaredMatch is a layout whose key and value matched, and the value's
// named groups (string), or the first holder's, once it is picked.
type declaredMatch struct {
	layout *Declared
	groups map[string]string
	// fenceKey is Options.FenceKey, for the {fence_key} placeholder.
	fenceKey func(lockKey string) string
}

// candidates returns the layouts, the user's then the built-in ones, whose
// key and value match, up to the first that needs no required companion:
// the companions of all of them are read, and matchDeclared picks one. A
// hash's, zset's, list's or set's items are read with its companions
// (Reader's second round trip): byKey matches those by key and type
// alone, all of them, as the first by key may not be the one its items match.
func candidates(key string, v Value, opts Options, byKey bool) []declaredMatch {
	c := candidateSearch{key: key, v: v, opts: opts, byKey: byKey}
	for i := range opts.Declared {
		if c.try(&opts.Declared[i]) {
			return c.out
		}
	}
	builtin := builtinLayouts()
	for it := builtinIndex().entries(key); ; {
		i, ok := it.next()
		if !ok || c.try(&builtin[i]) {
			return c.out
		}
	}
}

// candidateSearch is one candidates call: what it looks for, what it found.
type candidateSearch struct {
	key   string
	v     Value
	opts  Options
	byKey bool
	out   []declaredMatch
}

// try adds d when its key and value match, and reports whether the search
// ends there (d needs no required companion, or is a companion by name).
func (c *candidateSearch) try(d *Declared) bool {
	if d.byName && !d.companionByName(c.v) || !d.byName && !d.ofType(c.v) {
		return false
	}
	if _, ok := globRuns(d.keyParts, c.key, false); !ok {
		return false
	}
	if !d.byName && (!c.byKey || d.Type == "string") && !d.matches(c.v) {
		return false
	}
	if c.out == nil {
		c.out = make([]declaredMatch, 0, 4)
	}
	c.out = append(c.out, declaredMatch{layout: d, fenceKey: c.opts.FenceKey})
	return d.byName || !d.needsCompanion() && (!c.byKey || d.Type == "string")
}

// ofType reports whether v is of d's type and d has a rule to match it
// by: an expression, or for a stream or any type (a role layout) the key.
func (d *Declared) ofType(v Value) bool {
	if d.Type == "any" {
		return v.Type != "none" && v.Type != ""
	}
	return d.Type == v.Type && (d.value != nil || d.field != nil || d.member != nil || d.byNameOnly())
}

// byNameOnly reports a type whose values lockctl has no rule for: a
// stream, or any type; a key of it matches by name (and companions) alone.
func (d *Declared) byNameOnly() bool { return d.Type == "stream" || d.Type == "any" }

// needsCompanion reports a layout told apart by a required companion.
func (d *Declared) needsCompanion() bool {
	for _, c := range d.Companions {
		if c.Required {
			return true
		}
	}
	return false
}

// matches reports whether v matches d's expressions.
func (d *Declared) matches(v Value) bool {
	_, ok := d.matchValue(v, false)
	return ok
}

// matchValue matches v against d's expressions; with keep, it returns
// the named groups of the string value, or of the first field or member.
func (d *Declared) matchValue(v Value, keep bool) (map[string]string, bool) {
	switch {
	case d.byNameOnly(): // known by its key (and required companions) alone
		return map[string]string{}, true
	case v.Truncated && d.Type == "string": // a hash's, zset's, list's or set's members read are matched
		return nil, false
	case d.Type == "string":
		if d.Size > 0 && len(v.Bytes) != d.Size || !d.valueBounds.fits(len(v.Bytes)) || !d.value.Match(v.Bytes) {
			return nil, false
		}
		if !keep && d.AcquiredWithin == 0 {
			return nil, true
		}
		g, _ := groupsOf(d.value, string(v.Bytes), true)
		return g, d.recent(g["acquired_at"], v.ReadAtMS)
	case d.Type == "hash":
		return d.matchFields(v, keep)
	}
	return d.matchMembers(v, keep)
}

// recent reports whether the acquire time s is within AcquiredWithin of
// the read (readAtMS, Unix ms; 0 not known: no time is near it).
func (d *Declared) recent(s string, readAtMS int64) bool {
	if d.AcquiredWithin == 0 {
		return true
	}
	t, ok := groupTime(s)
	diff := time.Duration(t.UnixMilli()-readAtMS) * time.Millisecond
	return ok && readAtMS != 0 && diff >= -d.AcquiredWithin && diff <= d.AcquiredWithin
}

// groupsOf matches s whole and, with keep, returns its named groups (a
// map, never nil); without, only whether it matched: nothing allocated.
func groupsOf(re *regexp.Regexp, s string, keep bool) (map[string]string, bool) {
	if !keep {
		return nil, re.MatchString(s)
	}
	m := re.FindStringSubmatch(s)
	if m == nil {
		return nil, false
	}
	g := map[string]string{}
	for i, name := range re.SubexpNames() {
		if name != "" && m[i] != "" {
			g[name] = m[i]
		}
	}
	return g, true
}

// globRuns matches key against a glob of literal bytes, * and ?, split
// at its stars (parts), and returns what each * matched: the later parts
// placed rightmost, so the first * takes the longest run, as a shell's
// backtracking would. Without keep it only matches and allocates
// nothing: a scan meets every key with every layout.
func globRuns(parts []string, key string, keep bool) ([]string, bool) {
	if len(parts) == 1 {
		return nil, len(key) == len(parts[0]) && literalAt(parts[0], key)
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(key) < len(first)+len(last) || !literalAt(first, key) || !literalAt(last, key[len(key)-len(last):]) {
		return nil, false
	}
	mid := key[len(first) : len(key)-len(last)]
	ends := make([]int, 0, 8)
	end := len(mid)
	for j := len(parts) - 2; j >= 1; j-- {
		pos := lastLiteral(parts[j], mid[:end])
		if pos < 0 {
			return nil, false
		}
		ends = append(ends, pos+len(parts[j]), end)
		end = pos
	}
	if !keep {
		return nil, true
	}
	runs := make([]string, len(parts)-1)
	runs[0] = mid[:end]
	for j, k := 1, len(ends)-2; k >= 0; j, k = j+1, k-2 {
		runs[j] = mid[ends[k]:ends[k+1]]
	}
	return runs, true
}

// literalAt reports whether s begins with lit, where ? in lit is any byte.
func literalAt(lit, s string) bool {
	if len(s) < len(lit) {
		return false
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] != '?' && lit[i] != s[i] {
			return false
		}
	}
	return true
}

// lastLiteral is the last index of lit in s (? any byte), or -1.
func lastLiteral(lit, s string) int {
	for i := len(s) - len(lit); i >= 0; i-- {
		if literalAt(lit, s[i:]) {
			return i
		}
	}
	return -1
}

// expand fills a companion or job id template for the lock at key:
// {key}, {tagged_key}, {value}, {fence_key} (the configured fence template's
// key, lockcore.FenceKeyFor by default) and {1}..{9}; any other {…} stays as is.
func (m declaredMatch) expand(tmpl, key string, v Value) string {
	if !strings.Contains(tmpl, "{") {
		return tmpl
	}
	var b strings.Builder
	b.Grow(len(tmpl) + 2*len(key) + 2)
	for tmpl != "" {
		i := strings.IndexByte(tmpl, '{')
		j := strings.IndexByte(tmpl[max(i, 0):], '}')
		if i < 0 || j < 0 {
			b.WriteString(tmpl)
			break
		}
		b.WriteString(tmpl[:i])
		name := tmpl[i+1 : i+j]
		switch n := placeholderRun(name); {
		case name == "key":
			b.WriteString(key)
		case name == "tagged_key" && strings.Contains(key, "{"):
			b.WriteString(key)
		case name == "tagged_key": // Redisson's prefixName: the key in a hash tag
			b.WriteString("{" + key + "}")
		case name == "value":
			b.Write(v.Bytes)
		case name == "fence_key" && m.fenceKey != nil:
			b.WriteString(m.fenceKey(key))
		case name == "fence_key":
			b.WriteString(lockcore.FenceKeyFor(key))
		case n >= 1 && n < len(m.layout.keyParts):
			runs, _ := globRuns(m.layout.keyParts, key, true)
			b.WriteString(runs[n-1])
		default:
			b.WriteByte('{') // a hash tag or text: the next { may begin a placeholder
			tmpl = tmpl[i+1:]
			continue
		}
		tmpl = tmpl[i+j+1:]
	}
	return b.String()
}

// placeholderRun is the glob run a placeholder {1}..{9} names, else 0.
func placeholderRun(name string) int {
	if len(name) != 1 || name[0] < '1' || name[0] > '9' {
		return 0
	}
	return int(name[0] - '0')
}

// companionKeys are the companions of every candidate layout at key, each
// key once per role (two variants of a layout name the same counter).
func companionKeys(key string, v Value, ms []declaredMatch) []companionKey {
	var out []companionKey
	for _, m := range ms {
		for _, c := range m.layout.Companions {
			ck := companionKey{Role: c.Role, Key: m.expand(c.Key, key, v), Get: c.Value != ""}
			i := slices.IndexFunc(out, func(o companionKey) bool { return o.Role == ck.Role && o.Key == ck.Key })
			if i < 0 {
				out = append(out, ck)
			}
			if i >= 0 && ck.Get {
				out[i].Get = true
			}
		}
	}
	return out
}

// matchDeclared picks the first candidate whose required companions are
// met (one exists), and whether one did.
func matchDeclared(key string, v Value, comp map[string]Value, opts Options) (declaredMatch, bool) {
	for _, m := range candidates(key, v, opts, false) {
		if m.met(key, v, comp) {
			if !m.layout.byName && m.groups == nil {
				m.groups, _ = m.layout.matchValue(v, true)
			}
			return m, true
		}
	}
	return declaredMatch{}, false
}

// met reports whether m needs no required companion or one of them
// exists; the key itself is no evidence of its own layout. A fence token
// that reads as a time, with no counter beside it, is a time, not a fence.
func (m *declaredMatch) met(key string, v Value, comp map[string]Value) bool {
	if m.layout.fenceGroup && m.timeNotFence(key, v, comp) {
		return false
	}
	if !m.layout.needsCompanion() {
		return true
	}
	for _, c := range m.layout.Companions {
		if ck := m.expand(c.Key, key, v); c.Required && ck != key && c.there(comp[ck]) {
			return true
		}
	}
	return false
}

// timeNotFence reports a fence group that is a time (Unix s, ms or µs)
// while none of the layout's fence counters exists: "<ms>:<token>" is
// written by many without a fence (docs/layouts.md, composite-token).
func (m *declaredMatch) timeNotFence(key string, v Value, comp map[string]Value) bool {
	m.groups, _ = m.layout.matchValue(v, true)
	fence := m.groups["fence"]
	if len(fence) < 9 { // shorter than 978307200, 2001 in Unix s: no time parseTime takes
		return false
	}
	if _, _, isTime := parseTime(fence); !isTime {
		return false
	}
	for _, c := range m.layout.Companions {
		if c.Role == RoleFence && c.there(comp[m.expand(c.Key, key, v)]) {
			return false
		}
	}
	return true
}

// detectDeclared applies a declared layout: owner, holder and times from
// the groups; holders of a hash, zset or set; certain (or the layout's
// cap) when every companion exists, else likely; the fence checked
// against its counter.
func (d *detection) detectDeclared(m declaredMatch) {
	dl := m.layout
	conf := dl.Confidence
	var counter fenceCounter
	for _, c := range dl.Companions {
		k := m.expand(c.Key, d.key, d.v)
		cv := d.comp[k]
		there := c.there(cv)
		if c.Role == RoleFence && !counter.exists && (counter.key == "" || there) {
			counter = fenceCounter{k, cv, there} // the first that exists, else the first
		}
		if !there && !c.Required && conf == Certain {
			conf = Likely // a required one that is missing is another's absence, not this one's
		}
		// A value that does not match is another's key, not this one missing.
		d.used[k] = there || !c.Optional && (c.value == nil || !cv.Exists())
		if there && c.Role == RoleQueue && cv.Type == "list" {
			d.lock.Waiters = append([]string{}, cv.Items...)
		}
		if there && c.value != nil {
			m.groups = fillGroups(m.groups, c.value, cv.Bytes)
		}
		if there && c.Role == RolePermits {
			d.permitsLeft(cv)
		}
	}
	if dl.memberEvidence != nil && conf != Certain && dl.anyEvidence(d.v) {
		conf = Certain
	}
	d.setLayout(dl.Name, conf)
	d.valueTTL = dl.ValueExpiry
	switch dl.Type {
	case "string":
		if m.groups["owner"] == "" { // else set from the group below
			d.setOwner(d.v.Bytes)
		}
	case "hash":
		d.declaredFields(dl, m.groups)
	default:
		d.declaredMembers(dl)
	}
	if o := m.groups["owner"]; o != "" && dl.Type != "zset" && dl.Type != "set" {
		d.setOwner([]byte(o))
	}
	if d.lock.Holders == nil || dl.ModeField != "" { // a shared lock's first holder speaks for it
		d.holderGroups(m.groups)
	}
	if dl.ModeField != "" {
		d.holder().Mode = dl.lockMode(d.v)
	}
	if dl.JobID != "" {
		d.holder().JobID = m.expand(dl.JobID, d.key, d.v)
	}
	if dl.IssuesFence && !d.fenceFindings(m.groups["fence"], counter.key, counter.v, counter.exists) && conf == Certain {
		d.lock.Layout.Confidence = Likely // a token no acquire wrote
	}
}

// fenceCounter is a layout's fence counter: its key, what was read there
// and whether it exists.
type fenceCounter struct {
	key    string
	v      Value
	exists bool
}

// fillGroups adds to g the named groups of re in b that g lacks: a
// companion's value adds to the lock's, never overrides it.
func fillGroups(g map[string]string, re *regexp.Regexp, b []byte) map[string]string {
	more, _ := groupsOf(re, string(b), true)
	if g == nil {
		g = map[string]string{}
	}
	for k, x := range more {
		if _, ok := g[k]; !ok {
			g[k] = x
		}
	}
	return g
}

// holderGroups copies the named groups into the holder.
func (d *detection) holderGroups(g map[string]string) {
	set := func(dst *string, name string) {
		if x := g[name]; x != "" {
			*dst = x
		}
	}
	if len(g) == 0 {
		return
	}
	h := d.holder()
	set(&h.ClientID, "holder")
	set(&h.Host, "host")
	set(&h.Thread, "thread")
	set(&h.JobID, "job_id")
	set(&h.Metadata, "metadata")
	if pid, ok := parseInt(g["pid"]); ok && g["pid"] != "" {
		h.PID = pid
	}
	if t, ok := d.acquiredTime(g["acquired_at"]); ok {
		h.AcquiredAt = rfc3339ms(t)
	}
	if t, ok := groupTime(g["expires_at"]); ok {
		h.ValueExpiresAt = rfc3339ms(t)
	}
	if *h == (Holder{}) {
		d.lock.Holder = nil
	}
}

// groupTime reads a time group: Unix s, ms or µs, RFC 3339, a version-1
// UUID's time (32 hex, or its bytes in base64: uuid1Token) or a ULID's.
func groupTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	if t, _, ok := parseTime(s); ok {
		return t, true
	}
	if t, ok := tokenTime(s); ok {
		return t, true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// tokenTime reads the time inside a token: a UUIDv1's (uuid1Token) or a ULID's.
func tokenTime(s string) (time.Time, bool) {
	if t, ok := uuid1Token(s); ok {
		return t, true
	}
	return ulidTime(s)
}

// acquiredTime reads an acquired_at group (groupTime); a time inside a
// token only within a day of the read: an id made once may outlive many
// acquires, and random bytes can have its shape.
func (d *detection) acquiredTime(s string) (time.Time, bool) {
	if t, ok := tokenTime(s); ok {
		return t, d.plausible(t)
	}
	return groupTime(s)
}
