package supervise

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// A pipe is a pipeline's (its reader may not be forked yet); a file, a
// buffer or a closed pipe is not.
func TestPipeOut(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !pipeOut(w) {
		t.Error("a pipe's writer was not taken for a pipeline")
	}
	if pipeOut(f) || pipeOut(&bytes.Buffer{}) {
		t.Error("a file or a buffer was taken for a pipeline")
	}
	w.Close()
	if pipeOut(w) {
		t.Error("a closed pipe was taken for a pipeline")
	}
}
