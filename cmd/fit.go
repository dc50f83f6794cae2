package cmd

import (
	"io"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/charmbracelet/x/ansi"
)

// Fitting bordered tables and lines of text to the terminal's width (issue
// 21 §3): rows wider than the terminal wrapped and broke the borders.

// minColumn is the fewest cells a narrowed column keeps (a header keeps
// its whole width: lipgloss shows one line of it); when the columns cannot
// all keep that many, each row is shown as a record instead (as psql's
// expanded mode does).
const minColumn = 12

// fitColumns returns content widths for columns of natural widths nat so
// that they sum to at most avail: the widest columns are narrowed first, to
// one common limit, none below its floor. It returns nat when it fits, and
// nil when the floors do not.
func fitColumns(nat, floor []int, avail int) []int {
	total, widest := 0, 0
	for _, n := range nat {
		total += n
		widest = max(widest, n)
	}
	if total <= avail {
		return nat
	}
	for limit := widest - 1; limit >= 1; limit-- {
		widths := make([]int, len(nat))
		sum := 0
		for i, n := range nat {
			widths[i] = max(min(n, limit), floor[i])
			sum += widths[i]
		}
		if sum > avail {
			continue
		}
		// Cells left over go to the narrowed columns, one each.
		for i, n := range nat {
			if sum < avail && widths[i] < n {
				widths[i]++
				sum++
			}
		}
		return widths
	}
	return nil
}

// wrapCells wraps each cell of rows to its column's width in widths, at
// spaces and hyphens where it can and inside a word where it must.
func wrapCells(rows [][]string, widths []int) [][]string {
	out := make([][]string, len(rows))
	for r, row := range rows {
		out[r] = make([]string, len(row))
		for c, cell := range row {
			out[r][c] = wrapText(cell, widths[c])
		}
	}
	return out
}

// wrapText wraps s to lines of at most width cells (ANSI colour kept) with
// no trailing spaces; width 0 leaves s as it is.
func wrapText(s string, width int) string {
	if width <= 0 || cellWidth(s) <= width && !strings.Contains(s, "\n") {
		return s
	}
	lines := strings.Split(ansi.Wrap(s, width, ""), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// wrapWords wraps a line of text to width cells at spaces only: a word
// wider than width (a key, an owner token, a timestamp) stays whole on a
// line of its own, which a terminal may fold but a copy keeps whole
// (issue 32 §2); width 0 leaves s as it is.
func wrapWords(s string, width int) string {
	if width <= 0 || cellWidth(s) <= width && !strings.Contains(s, "\n") {
		return s
	}
	var out []string
	for _, para := range strings.Split(s, "\n") {
		line, lineW := "", 0
		// Each word keeps the spaces before it (alignment, indentation)
		// unless it starts a wrapped line; spaces after the last are dropped.
		for rest := strings.TrimRight(para, " "); rest != ""; {
			words := strings.TrimLeft(rest, " ")
			gap, word := rest[:len(rest)-len(words)], words
			if end := strings.IndexByte(words, ' '); end >= 0 {
				word = words[:end]
			}
			rest = words[len(word):]
			w := cellWidth(word)
			if lineW > 0 && lineW+len(gap)+w > width {
				out = append(out, line)
				line, lineW, gap = "", 0, ""
			}
			line += gap + word
			lineW += len(gap) + w
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// columnWidths are the widths of the widest line of each column of rows.
func columnWidths(rows [][]string) []int {
	var widths []int
	for _, row := range rows {
		for c, cell := range row {
			if c == len(widths) {
				widths = append(widths, 0)
			}
			for _, l := range strings.Split(cell, "\n") {
				widths[c] = max(widths[c], cellWidth(l))
			}
		}
	}
	return widths
}

// borderedTable renders a table with rounded borders and cells padded one
// space each side, within width columns when width > 0: long cells wrap
// inside narrowed columns, or each row becomes a record of HEADER value
// lines when the columns cannot keep minColumn cells.
func borderedTable(w io.Writer, width int, st *Styles, head []string, rows [][]string) error {
	if width > 0 {
		// A border left of each column and one at the right; padding 2.
		avail := width - 3*len(head) - 1
		nat := columnWidths(append([][]string{head}, rows...))
		floor := make([]int, len(nat))
		for i, h := range head {
			floor[i] = max(min(nat[i], minColumn), cellWidth(h))
		}
		widths := fitColumns(nat, floor, avail)
		if widths == nil {
			return records(w, width, st, head, rows)
		}
		head = wrapCells([][]string{head}, widths)[0]
		rows = wrapCells(rows, widths)
	}
	tbl := table.New().
		Border(lipgloss.RoundedBorder()).
		BorderHeader(len(rows) > 0).
		StyleFunc(func(row, col int) lipgloss.Style { return st.Cell }).
		Headers(head...).
		Rows(rows...)
	_, err := io.WriteString(w, tbl.Render()+"\n")
	return err
}

// records writes each row as a bordered record, one line per column:
// header left, value right, wrapped to fit width; all records are as wide.
func records(w io.Writer, width int, st *Styles, head []string, rows [][]string) error {
	recs := make([][][]string, len(rows))
	var all [][]string
	for r, row := range rows {
		for c, cell := range row {
			recs[r] = append(recs[r], []string{head[c], cell})
		}
		all = append(all, recs[r]...)
	}
	widths := columnWidths(all)
	// Three borders, and two cells of padding per column.
	if fit := fitColumns(widths, []int{1, 1}, width-7); fit != nil {
		widths = fit
	}
	for _, rec := range recs {
		tbl := table.New().
			Border(lipgloss.RoundedBorder()).
			StyleFunc(func(row, col int) lipgloss.Style { return st.Cell.Width(widths[col] + 2) }).
			Rows(wrapCells(rec, widths)...)
		if _, err := io.WriteString(w, tbl.Render()+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// Column is one column of an object table (one row per lock, per key):
// kubectl's and gh's shape, where a narrow terminal drops whole columns
// instead of wrapping a key or an owner token someone will copy (issue 32).
type Column struct {
	Name string
	// Rank orders what a narrow terminal keeps: 0 is kept always, then 1,
	// 2, ...; the highest rank is dropped first.
	Rank int
	// Shorten lets the column's cells lose their middle to an ellipsis
	// (keys: their prefix and suffix tell them apart), down to shortFloor.
	Shorten bool
}

// shortFloor is the fewest cells a shortened column keeps before a
// lower-ranked column is dropped for it.
const shortFloor = 24

// columnGap is the space between two columns of an object table.
const columnGap = 2

// fitObjectColumns chooses, for columns of natural widths nat, which to
// keep and their widths so that a row fits avail cells: Shorten columns
// narrow to shortFloor, then the highest-ranked columns go, one at a
// time, and what they leave goes back to the shortened ones. A column of
// rank 0 is never dropped: alone, it shortens below shortFloor (to 1).
func fitObjectColumns(cols []Column, nat []int, avail int) (keep []bool, widths []int) {
	order := make([]int, len(cols)) // column indexes, dropped first last
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cols[a].Rank - cols[b].Rank })
	for kept := len(order); kept >= 1; kept-- {
		keep = make([]bool, len(cols))
		for _, i := range order[:kept] {
			keep[i] = true
		}
		// The last try: what is left cannot be dropped.
		last := kept == 1 || cols[order[kept-1]].Rank == 0
		if w, ok := shortenToFit(cols, nat, keep, avail, last); ok || last {
			if !ok {
				w = nat
			}
			return keep, w
		}
	}
	return keep, nat
}

// shortenToFit gives the kept columns their natural widths, narrowing the
// Shorten ones evenly as needed but not below shortFloor (below it, down
// to 1 cell, when last is set: nothing is left to drop); ok is false when
// that does not fit avail.
func shortenToFit(cols []Column, nat []int, keep []bool, avail int, last bool) ([]int, bool) {
	widths := make([]int, len(nat))
	fixed, short, n := 0, 0, 0
	for i, k := range keep {
		if !k {
			continue
		}
		widths[i] = nat[i]
		if n > 0 {
			fixed += columnGap
		}
		n++
		if cols[i].Shorten {
			short += nat[i]
		} else {
			fixed += nat[i]
		}
	}
	over := fixed + short - avail
	if over <= 0 {
		return widths, true
	}
	floor := shortFloor
	if last {
		floor = 1
	}
	// Narrow the widest Shorten column a cell at a time (a long key gives
	// before a short one).
	for ; over > 0; over-- {
		widest := -1
		for i, k := range keep {
			if k && cols[i].Shorten && widths[i] > floor && (widest < 0 || widths[i] > widths[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			return nil, false
		}
		widths[widest]--
	}
	return widths, true
}

// shortenMiddle cuts s to width cells by replacing its middle with an
// ellipsis; s already fitting is returned as it is.
func shortenMiddle(s string, width int) string {
	w := cellWidth(s)
	if w <= width {
		return s
	}
	if width <= 1 {
		return "…"
	}
	head := width / 2
	tail := width - 1 - head
	return ansi.Truncate(s, head, "") + "…" + ansi.TruncateLeft(s, w-tail, "")
}

// objectTable writes rows under cols on a terminal, one line per row and
// no cell ever wrapped: fitted to width (0: no limit) by fitObjectColumns,
// with the header in the Header style. It returns the names of the columns
// it left out, for a detail line that prints what they hold.
func objectTable(w io.Writer, width int, st *Styles, cols []Column, rows [][]string) ([]string, error) {
	head := make([]string, len(cols))
	for i, c := range cols {
		head[i] = headerText(c.Name)
	}
	nat := columnWidths(append([][]string{head}, rows...))
	keep, widths := make([]bool, len(cols)), nat
	for i := range keep {
		keep[i] = true
	}
	if width > 0 {
		keep, widths = fitObjectColumns(cols, nat, width)
	}
	var dropped []string
	for i, k := range keep {
		if !k {
			dropped = append(dropped, head[i])
		}
	}
	var b strings.Builder
	line := func(cells []string, style *lipgloss.Style) {
		var l strings.Builder
		first := true
		for i, cell := range cells {
			if !keep[i] {
				continue
			}
			if !first {
				l.WriteString(strings.Repeat(" ", columnGap))
			}
			first = false
			cell = shortenMiddle(cell, widths[i])
			if style != nil {
				l.WriteString(style.Render(cell))
			} else {
				l.WriteString(cell)
			}
			l.WriteString(strings.Repeat(" ", widths[i]-cellWidth(cell)))
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	line(head, &st.Header)
	for _, row := range rows {
		line(row, nil)
	}
	_, err := io.WriteString(w, b.String())
	return dropped, err
}

// streamRows is how many rows an object stream holds back to size its
// columns before it prints the first: a screenful.
const streamRows = 50

// ObjectStream prints an object table row by row as rows come (a scan's
// locks as they are read), sizing the columns on the first streamRows rows
// (or all, if fewer come): a later, wider key loses its middle, a later,
// wider cell of another column shifts the rest of its row. TableView's
// Objects rules otherwise (which columns a narrow terminal drops).
type ObjectStream struct {
	t       *TableView
	cols    []Column
	held    [][]string
	keep    []bool
	widths  []int
	started bool
	dropped []string
}

// ObjectStream starts a streamed object table under cols.
func (t *TableView) ObjectStream(cols []Column) *ObjectStream {
	return &ObjectStream{t: t, cols: cols}
}

// Add prints row, or holds it until streamRows rows size the columns.
func (s *ObjectStream) Add(row []string) {
	if s.t.err != nil {
		return
	}
	cells := make([]string, len(row))
	for c, cell := range row {
		cells[c] = strings.ReplaceAll(escapeCell(cell, s.t.p.Color), "\t", tabSpaces)
	}
	if !s.started {
		s.held = append(s.held, cells)
		if len(s.held) >= streamRows {
			s.start()
		}
		return
	}
	s.line(cells, nil)
}

// Close prints what is held and returns the headers of the columns left out.
func (s *ObjectStream) Close() []string {
	if !s.started && len(s.held) > 0 {
		s.start()
	}
	return s.dropped
}

func (s *ObjectStream) start() {
	s.started = true
	head := make([]string, len(s.cols))
	for i, c := range s.cols {
		head[i] = headerText(c.Name)
	}
	s.widths = columnWidths(append([][]string{head}, s.held...))
	s.keep = make([]bool, len(s.cols))
	for i := range s.keep {
		s.keep[i] = true
	}
	if width := s.t.p.Width; s.t.p.TTY && width > 0 && s.t.p.Format != formatWide {
		s.keep, s.widths = fitObjectColumns(s.cols, s.widths, width)
	}
	for i, k := range s.keep {
		if !k {
			s.dropped = append(s.dropped, head[i])
		}
	}
	s.line(head, &s.t.p.Styles.Header)
	for _, row := range s.held {
		s.line(row, nil)
	}
	s.held = nil
}

// line writes one row at the stream's widths; only a TTY drops columns
// and shortens keys.
func (s *ObjectStream) line(cells []string, style *lipgloss.Style) {
	var l strings.Builder
	first := true
	for i, cell := range cells {
		if !s.keep[i] {
			continue
		}
		if !first {
			l.WriteString(strings.Repeat(" ", columnGap))
		}
		first = false
		if s.cols[i].Shorten && s.t.p.TTY {
			cell = shortenMiddle(cell, s.widths[i])
		}
		if style != nil && s.t.p.TTY {
			l.WriteString(style.Render(cell))
		} else {
			l.WriteString(cell)
		}
		l.WriteString(strings.Repeat(" ", max(s.widths[i]-cellWidth(cell), 0)))
	}
	_, s.t.err = io.WriteString(s.t.p.Out, strings.TrimRight(l.String(), " ")+"\n")
}
