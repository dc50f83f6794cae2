package cmd

import (
	"io"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// The palette and every style lockctl uses, declared once. The colours are
// the terminal's own ANSI palette, whose theme picks shades readable on its
// background. Adaptive colours would ask the terminal for its background
// (OSC 11) on the first styled output and wait up to 5s where nothing
// answers (a pty under script(1) or a CI runner, an editor's shell).
var (
	colorAccent = lipgloss.Color("5") // magenta
	colorMuted  = lipgloss.Color("8") // bright black (grey)
	colorError  = lipgloss.Color("1") // red
	colorWarn   = lipgloss.Color("3") // yellow
	colorOK     = lipgloss.Color("2") // green
)

// Styles are the named styles, bound to one output's renderer so colour is
// off when that output is not a terminal, NO_COLOR is set or --no-color given.
type Styles struct {
	Title  lipgloss.Style
	Header lipgloss.Style
	Muted  lipgloss.Style
	Error  lipgloss.Style
	Warn   lipgloss.Style
	OK     lipgloss.Style
	Accent lipgloss.Style
	// Cell pads a cell of a table on a terminal by one space each side.
	Cell lipgloss.Style
	// Lane styles the swimlane of `lockctl simulate`, by segment state.
	Lane LaneStyles
}

// LaneStyles colour the swimlane states of `lockctl simulate`: working while
// holding the lock, working after losing it, paused, partitioned, stuck in
// a call, crashed.
type LaneStyles struct {
	Holding     lipgloss.Style
	Lost        lipgloss.Style
	Paused      lipgloss.Style
	Partitioned lipgloss.Style
	Call        lipgloss.Style
	Crashed     lipgloss.Style
	Label       lipgloss.Style
}

// newStyles returns the styles for w; colour only when color is true.
func newStyles(w io.Writer, color bool) *Styles {
	r := lipgloss.NewRenderer(w)
	if !color {
		r.SetColorProfile(termenv.Ascii)
	}
	return &Styles{
		Title:  r.NewStyle().Bold(true).Foreground(colorAccent),
		Header: r.NewStyle().Bold(true),
		Muted:  r.NewStyle().Foreground(colorMuted),
		Error:  r.NewStyle().Bold(true).Foreground(colorError),
		Warn:   r.NewStyle().Foreground(colorWarn),
		OK:     r.NewStyle().Foreground(colorOK),
		Accent: r.NewStyle().Foreground(colorAccent),
		Cell:   r.NewStyle().Padding(0, 1),
		Lane: LaneStyles{
			Holding:     r.NewStyle().Foreground(colorOK),
			Lost:        r.NewStyle().Foreground(colorError),
			Paused:      r.NewStyle().Foreground(colorMuted),
			Partitioned: r.NewStyle().Foreground(colorWarn),
			Call:        r.NewStyle().Foreground(colorAccent),
			Crashed:     r.NewStyle().Bold(true).Foreground(colorError),
			Label:       r.NewStyle().Bold(true).Width(laneLabelWidth),
		},
	}
}

// laneLabelWidth is the width of the actor names left of a swimlane.
const laneLabelWidth = 6

// Level styles a severity or status word: error/fail/unsafe red,
// warning/warn yellow, ok/pass/safe green, anything else unstyled.
func (s *Styles) Level(word string) string {
	switch word {
	case "error", "fail", "unsafe", "lost":
		return s.Error.Render(word)
	case "warning", "warn", "manual", "inconclusive":
		return s.Warn.Render(word)
	case "ok", "pass", "safe", "info":
		return s.OK.Render(word)
	}
	return word
}

// colorWanted applies NO_COLOR (noColorEnv; no-color.org: set and not
// empty) and --no-color on top of TTY detection.
func colorWanted(tty, noColorFlag bool, noColorEnv string) bool {
	if noColorEnv != "" {
		return false
	}
	return tty && !noColorFlag
}
