package inspect

import (
	_ "embed"
	"sync"
)

// builtinLayoutsYAML holds the built-in layouts as data, in the format of
// a user's layouts file (docs/layouts.md, "Layouts you declare"): each
// entry cites the library source that fixes it.
//
//go:embed builtin_layouts.yaml
var builtinLayoutsYAML []byte

// builtinLayouts parses and compiles the built-in layouts on first use, by
// the same loader and checks as a user's file: commands that never
// inspect do not pay for it. TestBuiltinLayouts keeps the file valid.
var builtinLayouts = sync.OnceValue(func() []Declared {
	ds, err := parseLayouts("builtin_layouts.yaml", builtinLayoutsYAML, true)
	if err != nil {
		panic("inspect: the embedded builtin_layouts.yaml is invalid: " + err.Error())
	}
	return Compile(ds)
})

// builtinIndex indexes the built-in layouts by their key globs' literal
// ends, once: a scan meets every key with every layout, and most globs
// begin or end with bytes most keys lack ("asynq:", ":active").
var builtinIndex = sync.OnceValue(func() *globIndex { return indexGlobs(builtinLayouts()) })

// globIndex finds the entries whose key glob could match a key without
// trying them all: by the first byte of a glob's literal prefix, else the
// last byte of its literal suffix; a glob with neither ("*", "*:*") may
// match any key. Each list holds entry indices in the file's order.
type globIndex struct {
	prefix, suffix [256][]int32
	anyKey         []int32
}

// indexGlobs indexes ds by their compiled key parts (Declared.keyParts).
func indexGlobs(ds []Declared) *globIndex {
	x := &globIndex{}
	for i := range ds {
		first, last := ds[i].keyParts[0], ds[i].keyParts[len(ds[i].keyParts)-1]
		switch {
		case first != "" && first[0] != '?':
			x.prefix[first[0]] = append(x.prefix[first[0]], int32(i))
		case last != "" && last[len(last)-1] != '?':
			x.suffix[last[len(last)-1]] = append(x.suffix[last[len(last)-1]], int32(i))
		default:
			x.anyKey = append(x.anyKey, int32(i))
		}
	}
	return x
}

// entries lists, in the file's order, the entries that may match key.
func (x *globIndex) entries(key string) globIter {
	if key == "" {
		return globIter{lists: [3][]int32{x.anyKey}}
	}
	return globIter{lists: [3][]int32{x.anyKey, x.prefix[key[0]], x.suffix[key[len(key)-1]]}}
}

// globIter merges a globIndex's three lists for one key, lowest index first.
type globIter struct{ lists [3][]int32 }

// next returns the next entry index, false when none is left.
func (it *globIter) next() (int, bool) {
	best := -1
	for j, l := range it.lists {
		if len(l) > 0 && (best < 0 || l[0] < it.lists[best][0]) {
			best = j
		}
	}
	if best < 0 {
		return 0, false
	}
	i := it.lists[best][0]
	it.lists[best] = it.lists[best][1:]
	return int(i), true
}
