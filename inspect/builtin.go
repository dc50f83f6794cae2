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
