package trial

import (
	"html"
	"io"
	"time"

	"github.com/anishathalye/porcupine"
)

// Linearization is Porcupine's proof that a failing window (a
// CodeNotLinearizable violation's operations) has no linearization: its
// partial linearizations and the operation each could not take next, for
// Porcupine's own visualization. It is not part of the JSON shape.
type Linearization struct {
	info porcupine.LinearizationInfo
}

// Visualize writes Porcupine's HTML page of the window to w: one
// self-contained document (inline CSS, JavaScript and data) whose script
// draws the workers' operations and their partial linearizations. Errors
// are w's.
func (l *Linearization) Visualize(w io.Writer) error {
	return porcupine.Visualize(visualModel, l.info, w)
}

// visualModel is registerModel for the visualization: Porcupine v1.3.1's
// tooltip sets a state's description as innerHTML, and a register's value
// is the worker's own text, so it is escaped here.
var visualModel = func() porcupine.Model {
	m := registerModel
	m.DescribeState = func(state any) string { return html.EscapeString(registerModel.DescribeState(state)) }
	return m
}()

// linearizationOf is window w's proof, nil unless Porcupine, re-run on it
// in verbose mode within timeout (at least linearizeViewMin: a failing
// window is small), finds it illegal again.
func linearizationOf(w []porcupine.Operation, timeout time.Duration) *Linearization {
	res, info := porcupine.CheckOperationsVerbose(registerModel, w, max(timeout, linearizeViewMin))
	if res != porcupine.Illegal {
		return nil
	}
	return &Linearization{info: info}
}

// linearizeViewMin is the least time the verbose re-check of a failing
// window gets once the check's own deadline has passed.
const linearizeViewMin = time.Second
