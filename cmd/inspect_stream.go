package cmd

import (
	"bufio"
	"bytes"
	"compress/flate"
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"go.yaml.in/yaml/v3"
)

// spillBytes is how much of a scan's encoded locks lockSorter keeps in
// memory (4 MiB, about 10,000 locks) before it writes them out as one
// sorted run.
const spillBytes = 4 << 20

// lockRec is one lock of a scan: its place in inspect.CompareTTL's order
// and its compact JSON.
type lockRec struct {
	rank int
	ttl  int64
	key  string
	js   []byte
}

func (a *lockRec) compare(b *lockRec) int {
	switch {
	case a.rank != b.rank:
		return a.rank - b.rank
	case a.ttl < b.ttl:
		return -1
	case a.ttl > b.ttl:
		return 1
	}
	return strings.Compare(a.key, b.key)
}

// lockSorter gives a scan's locks back in inspect.SortByTTL's order while
// keeping memory flat in their number: up to spillBytes in memory, beyond
// that as sorted runs in an unnamed temporary file, merged at the end (an
// external merge sort). Ties keep the scan's order, as SortByTTL does.
type lockSorter struct {
	limit    int // spillBytes; tests make it small
	buf      []lockRec
	bufBytes int
	file     *os.File
	cw       *countWriter // file, counted: where each run starts
	zw       *flate.Writer
	fw       *bufio.Writer
	runs     [][2]int64 // offset and length of each run in file
	enc      *json.Encoder
	encBuf   bytes.Buffer
}

func newLockSorter() *lockSorter {
	s := &lockSorter{limit: spillBytes}
	s.enc = json.NewEncoder(&s.encBuf)
	s.enc.SetEscapeHTML(false)
	return s
}

// add encodes l as writeJSON would, less the indentation.
func (s *lockSorter) add(l *inspect.Lock) error {
	s.encBuf.Reset()
	if err := s.enc.Encode(l); err != nil {
		return err
	}
	js := bytes.TrimSuffix(s.encBuf.Bytes(), []byte("\n"))
	r := lockRec{key: l.Key, js: bytes.Clone(js)}
	r.rank, r.ttl = inspect.TTLRank(l)
	s.buf = append(s.buf, r)
	if s.bufBytes += len(js) + len(l.Key) + 64; s.bufBytes >= s.limit {
		return s.spill()
	}
	return nil
}

// spill writes the buffered locks, sorted, as the next run: a DEFLATE
// stream of its own (fast level; the findings' texts repeat, so the file
// is a tenth of the JSON, and quick to free when it is closed).
func (s *lockSorter) spill() error {
	if len(s.buf) == 0 {
		return nil
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "lockctl-inspect-*")
		if err != nil {
			return err
		}
		_ = os.Remove(f.Name()) // unnamed where the platform allows: gone on any exit
		s.file, s.cw = f, &countWriter{w: f}
		if s.zw, err = flate.NewWriter(s.cw, flate.BestSpeed); err != nil {
			return err
		}
		s.fw = bufio.NewWriterSize(s.zw, 64<<10)
	}
	slices.SortStableFunc(s.buf, func(a, b lockRec) int { return a.compare(&b) })
	start := s.cw.n
	s.zw.Reset(s.cw)
	s.fw.Reset(s.zw)
	var hdr [2*binary.MaxVarintLen64 + 9]byte
	for i := range s.buf {
		r := &s.buf[i]
		h := append(hdr[:0], byte(r.rank))
		h = binary.BigEndian.AppendUint64(h, uint64(r.ttl))
		h = binary.AppendUvarint(h, uint64(len(r.key)))
		for _, b := range [][]byte{h, []byte(r.key), binary.AppendUvarint(nil, uint64(len(r.js))), r.js} {
			if _, err := s.fw.Write(b); err != nil {
				return err
			}
		}
		s.buf[i] = lockRec{}
	}
	if err := errors.Join(s.fw.Flush(), s.zw.Close()); err != nil {
		return err
	}
	s.runs = append(s.runs, [2]int64{start, s.cw.n - start})
	s.buf, s.bufBytes = s.buf[:0], 0
	return nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// each calls fn with every lock's compact JSON in order; it stops with
// ctx's error when ctx ends (SIGTERM), checked between locks.
func (s *lockSorter) each(ctx context.Context, fn func(js []byte) error) error {
	if s.file == nil {
		slices.SortStableFunc(s.buf, func(a, b lockRec) int { return a.compare(&b) })
		for i := range s.buf {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(s.buf[i].js); err != nil {
				return err
			}
		}
		return nil
	}
	if err := s.spill(); err != nil {
		return err
	}
	h := &runHeap{}
	for i, r := range s.runs {
		rr := &runReader{idx: i, r: bufio.NewReaderSize(flate.NewReader(io.NewSectionReader(s.file, r[0], r[1])), 16<<10)}
		if ok, err := rr.next(); err != nil {
			return err
		} else if ok {
			h.rs = append(h.rs, rr)
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		top := h.rs[0]
		if err := fn(top.cur.js); err != nil {
			return err
		}
		ok, err := top.next()
		switch {
		case err != nil:
			return err
		case ok:
			heap.Fix(h, 0)
		default:
			heap.Pop(h)
		}
	}
	return nil
}

// close removes the temporary file.
func (s *lockSorter) close() {
	if s.file != nil {
		_ = s.file.Close()
		_ = os.Remove(s.file.Name())
	}
}

// runReader reads one sorted run back, a record at a time.
type runReader struct {
	idx int // the run's place: ties go to the earlier run (scan order)
	r   *bufio.Reader
	cur lockRec
}

func (rr *runReader) next() (bool, error) {
	rank, err := rr.r.ReadByte()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	var ttl [8]byte
	if err == nil {
		_, err = io.ReadFull(rr.r, ttl[:])
	}
	var key, js []byte
	if err == nil {
		key, err = readChunk(rr.r)
	}
	if err == nil {
		js, err = readChunk(rr.r)
	}
	if err != nil {
		return false, err
	}
	rr.cur = lockRec{rank: int(rank), ttl: int64(binary.BigEndian.Uint64(ttl[:])), key: string(key), js: js}
	return true, nil
}

func readChunk(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	_, err = io.ReadFull(r, b)
	return b, err
}

// runHeap is the runs' current records, least first.
type runHeap struct{ rs []*runReader }

func (h *runHeap) Len() int { return len(h.rs) }
func (h *runHeap) Less(i, j int) bool {
	if c := h.rs[i].cur.compare(&h.rs[j].cur); c != 0 {
		return c < 0
	}
	return h.rs[i].idx < h.rs[j].idx
}
func (h *runHeap) Swap(i, j int) { h.rs[i], h.rs[j] = h.rs[j], h.rs[i] }
func (h *runHeap) Push(x any)    { h.rs = append(h.rs, x.(*runReader)) }
func (h *runHeap) Pop() any {
	x := h.rs[len(h.rs)-1]
	h.rs = h.rs[:len(h.rs)-1]
	return x
}

// partialPrintFor bounds how long a scan a signal stopped prints what it
// read: SIGTERM or Ctrl-C ends the command within a second (issue 43),
// where -o yaml of 30,000 locks read took 8.5 s to print.
const partialPrintFor = 500 * time.Millisecond

// streamScan prints a scan's sorted locks as -o json or yaml and decides
// the exit as printReport does. After a scan a signal stopped, what was
// read is printed until a second signal or for partialPrintFor; a signal
// while printing ends it at the next lock. Either way the document is
// closed and marked interrupted.
func streamScan(ctx context.Context, opts *InspectOptions, locks *lockSorter, sum inspect.Summary, notOwned bool) error {
	pctx := ctx
	if ctx.Err() != nil {
		var stop, cancel context.CancelFunc
		pctx, stop = signal.NotifyContext(context.Background(), stopSignals()...)
		defer stop()
		pctx, cancel = context.WithTimeout(pctx, partialPrintFor)
		defer cancel()
	}
	err := streamReport(pctx, opts.Printer.Out, opts.Format, locks, sum)
	switch {
	case err != nil && pctx != ctx && pctx.Err() != nil:
		return ctx.Err()
	case err != nil || sum.Interrupted:
		return err
	case notOwned:
		return checkFailed() // as unlock --owner: a script can trust exit 0
	}
	return opts.failed(sum)
}

// streamReport writes the Report of the sorted locks and sum in format
// (json or yaml), byte for byte as Printer.Print writes the whole Report,
// but one lock at a time. When ctx ends while it writes, the document is
// closed with what was written and sum.Interrupted set, and it returns
// ctx's error.
func streamReport(ctx context.Context, w io.Writer, format string, locks *lockSorter, sum inspect.Summary) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	n := 0
	quotes := map[string]bool{}
	err := locks.each(ctx, func(js []byte) error {
		var err error
		if format == formatYAML {
			err = yamlLock(bw, js, n == 0, quotes)
		} else {
			err = jsonLock(bw, js, n == 0)
		}
		n++
		return err
	})
	stopped := err != nil && ctx.Err() != nil
	if err != nil && !stopped {
		return err
	}
	sum.Interrupted = sum.Interrupted || stopped
	if format == formatYAML {
		err = yamlEnd(bw, n, sum)
	} else {
		err = jsonEnd(bw, n, sum)
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err == nil && stopped {
		return ctx.Err()
	}
	return err
}

// jsonLock writes one element of "locks", indented as writeJSON indents
// it (json.Indent of the compact form is what MarshalIndent does).
func jsonLock(w *bufio.Writer, js []byte, first bool) error {
	head := ",\n    "
	if first {
		head = "{\n  \"locks\": [\n    "
	}
	var b bytes.Buffer
	if err := json.Indent(&b, js, "    ", "  "); err != nil {
		return err
	}
	_, _ = w.WriteString(head)
	_, err := w.Write(b.Bytes())
	return err
}

func jsonEnd(w *bufio.Writer, n int, sum inspect.Summary) error {
	head := "\n  ],\n  \"summary\": "
	if n == 0 {
		head = "{\n  \"locks\": [],\n  \"summary\": "
	}
	js, err := json.MarshalIndent(sum, "  ", "  ")
	if err != nil {
		return err
	}
	_, _ = w.WriteString(head)
	_, _ = w.Write(js)
	_, err = w.WriteString("\n}\n")
	return err
}

// yamlLock writes one item of "locks:" as writeYAML writes it: the lock's
// JSON as a node, in block style, one sequence item, shifted by the
// indentation of the items of a top-level key.
func yamlLock(w *bufio.Writer, js []byte, first bool, quotes map[string]bool) error {
	if first {
		_, _ = w.WriteString("locks:\n")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(js, &doc); err != nil {
		return err
	}
	clearStyleCached(&doc, quotes)
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: doc.Content}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(seq); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	for line := range strings.Lines(b.String()) {
		if line != "\n" {
			_, _ = w.WriteString("  ")
		}
		_, _ = w.WriteString(line)
	}
	return nil
}

func yamlEnd(w *bufio.Writer, n int, sum inspect.Summary) error {
	if n == 0 {
		_, _ = w.WriteString("locks: []\n")
	}
	return writeYAML(w, struct {
		Summary inspect.Summary `json:"summary"`
	}{sum})
}
