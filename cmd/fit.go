package cmd

import (
	"io"
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
