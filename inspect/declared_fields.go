package inspect

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fields of a declared hash layout (docs/layouts.md, "A hash, a zset, a
// list and a set"): every field a holder, but a shared lock's mode field.

// matchFields matches every field of a hash but the mode field (ModeField,
// which must be there, read or write); with keep, it returns the groups of
// the first holder's field and value.
func (d *Declared) matchFields(v Value, keep bool) (map[string]string, bool) {
	if mode := d.lockMode(v); d.ModeField != "" && mode != "read" && mode != "write" {
		return nil, false // before any expression: most hashes have no mode field
	}
	var first map[string]string
	holders := 0
	for _, f := range v.Fields {
		if d.isModeField(f[0]) {
			continue
		}
		g, ok := d.matchField(f, keep && first == nil)
		if !ok {
			return nil, false
		}
		if first == nil {
			first = g
		}
		holders++
	}
	return first, holders > 0
}

// matchField matches one holder's field name and value; with keep, it
// returns their named groups.
func (d *Declared) matchField(f [2]string, keep bool) (map[string]string, bool) {
	g, ok := groupsOf(d.field, f[0], keep)
	if !ok {
		return nil, false
	}
	if d.fieldValue != nil {
		gv, ok := groupsOf(d.fieldValue, f[1], keep)
		if !ok {
			return nil, false
		}
		for k, x := range gv {
			g[k] = x
		}
	}
	return g, true
}

// isModeField reports the field that holds a shared lock's mode (ModeField).
func (d *Declared) isModeField(name string) bool { return d.ModeField != "" && name == d.ModeField }

// lockMode is the value of the mode field ("" when the layout has none or
// it was not read).
func (d *Declared) lockMode(v Value) string {
	if d.ModeField == "" {
		return ""
	}
	for _, f := range v.Fields {
		if d.isModeField(f[0]) {
			return f[1]
		}
	}
	return ""
}

// fieldGroups are the named groups of one holder's field and value, which
// matched (matchFields).
func (d *Declared) fieldGroups(f [2]string) map[string]string {
	g, _ := d.matchField(f, true)
	return g
}

// holderMode is a holder's mode in a shared lock: "write" when its mode
// group says so, else "read"; "" in a layout without a mode field.
func (d *Declared) holderMode(g map[string]string) string {
	switch {
	case d.ModeField == "":
		return ""
	case g["mode"] == "write":
		return "write"
	}
	return "read"
}

// holderIdentity is who holds through a field: its holder and thread
// groups when it has them (a Redisson writer's thread may also read: two
// fields, one thread), else the field itself.
func holderIdentity(field string, g map[string]string) string {
	if g["holder"] == "" && g["thread"] == "" {
		return field
	}
	return g["holder"] + ":" + g["thread"]
}

// declaredFields sets a hash lock's owner (its first holder's field) and
// hold count (from g, the groups of that field and its value); a hash of
// more holders, or a shared lock, lists them all.
func (d *detection) declaredFields(dl *Declared, g map[string]string) {
	var first string
	holders := 0
	for _, f := range d.v.Fields {
		if !dl.isModeField(f[0]) {
			if holders == 0 {
				first = f[0]
			}
			holders++
		}
	}
	d.setOwner([]byte(first))
	if n, ok := parseInt(g["count"]); ok {
		d.lock.HoldCount = ptr(n)
	}
	if holders > 1 || dl.ModeField != "" {
		d.declaredHashHolders(dl)
	}
}

// declaredHashHolders lists every field of a hash as a holder: in a shared
// lock, a read holder's lease from its lease key (Value.HoldPTTL), and a
// lock in mode write held by one holder, which may also read (Redisson,
// RedissonWriteLock.java). The permits in use are the live holders.
func (d *detection) declaredHashHolders(dl *Declared) {
	live := map[string]bool{}
	now := d.nowMS()
	for _, f := range d.v.Fields {
		if dl.isModeField(f[0]) {
			continue
		}
		g := dl.fieldGroups(f)
		acq := int64(0)
		if t, ok := d.acquiredTime(g["acquired_at"]); ok {
			acq = t.UnixMilli()
		}
		mode := dl.holderMode(g)
		d.addHolder(f[0], mode, acq, 0)
		h := &d.lock.Holders[len(d.lock.Holders)-1]
		if n, ok := parseInt(g["count"]); ok {
			h.HoldCount = ptr(n)
		}
		switch pttl, ok := d.v.HoldPTTL[f[0]]; {
		case !ok || mode != "read":
		case pttl == -2:
			h.Expired = true // its lease key is gone: the holder died, the others renew the hash
		case pttl >= 0 && now > 0:
			h.TTLMS, h.ExpiresAt = ptr(pttl), rfc3339ms(time.UnixMilli(now+pttl))
		}
		if !h.Expired {
			live[holderIdentity(f[0], g)] = true
		}
	}
	if dl.lockMode(d.v) == "write" && len(live) > 1 {
		d.lock.add(FindingOverAdmitted, SeverityError, "mode write with %d holders: a write lock admits one, which may also read", len(live))
	}
	d.lock.permitsMin = int64(len(live))
	if !d.v.Truncated {
		d.lock.PermitsInUse = ptr(int64(len(live)))
	}
	d.staleHolders()
}

// leaseModeFields are the mode fields of the layouts with read leases, the
// user's and the built-in ones: a hash without one needs no lease read.
func leaseModeFields(opts Options) []string {
	var out []string
	for _, list := range [2][]Declared{opts.Declared, builtinLayouts()} {
		for _, d := range list {
			if d.ReadLease != "" && !slices.Contains(out, d.ModeField) {
				out = append(out, d.ModeField)
			}
		}
	}
	return out
}

// readLeaseKey is the key of a read holder's lease (Declared.ReadLease)
// for the lock at key: {field} the holder's field, {count} its count
// group, the other placeholders as in a companion's template.
func (m declaredMatch) readLeaseKey(key string, v Value, field, count string) string {
	var b strings.Builder
	for i, part := range strings.Split(m.layout.ReadLease, "{field}") {
		if i > 0 {
			b.WriteString(field)
		}
		for j, lit := range strings.Split(part, "{count}") {
			if j > 0 {
				b.WriteString(count)
			}
			b.WriteString(m.expand(lit, key, v))
		}
	}
	return b.String()
}

// readLeases reads, in one more pipelined round trip, the PTTL of each
// read holder's lease key (Declared.ReadLease) of the shared hash locks in
// vals into HoldPTTL; comp are the companions read, which pick the
// layout. A holder whose count is not above 0 holds nothing to lease; a
// PTTL the server refuses (an ACL scoped to the lock keys) is left out.
func (r *Reader) readLeases(ctx context.Context, c redis.Cmdable, keys []string, vals []Value, comp map[string]Value) error {
	type lease struct {
		i     int
		field string
		cmd   *redis.Cmd
	}
	var leases []lease
	pipe := c.Pipeline()
	modes := leaseModeFields(r.Options)
	for i, v := range vals {
		if v.Type != "hash" || !slices.ContainsFunc(v.Fields, func(f [2]string) bool { return slices.Contains(modes, f[0]) }) {
			continue // no shared lock: no layout to match again
		}
		m, ok := matchDeclared(keys[i], v, comp, r.Options)
		if !ok || m.layout.ReadLease == "" {
			continue
		}
		for _, f := range v.Fields {
			if m.layout.isModeField(f[0]) {
				continue
			}
			g := m.layout.fieldGroups(f)
			if n, ok := parseInt(g["count"]); m.layout.holderMode(g) == "read" && (ok && n > 0 || g["count"] == "") {
				leases = append(leases, lease{i, f[0], pipe.Do(ctx, "pttl", m.readLeaseKey(keys[i], v, f[0], g["count"]))})
			}
		}
	}
	if len(leases) == 0 {
		return nil
	}
	if err := execPipe(ctx, pipe); err != nil {
		return err
	}
	for _, l := range leases {
		n, err := l.cmd.Int64()
		if err != nil {
			continue
		}
		v := &vals[l.i]
		if v.HoldPTTL == nil {
			v.HoldPTTL = map[string]int64{}
		}
		v.HoldPTTL[l.field] = n
	}
	return nil
}
