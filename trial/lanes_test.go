package trial

import (
	"testing"

	"github.com/lockctl/lockctl/history"
)

// A stale write the last sample still saw held (CI, a loaded sampler) is
// drawn as work without the lock; one marked already is not marked twice.
func TestMarkStaleDrawsTheWriteUnheld(t *testing.T) {
	held := history.NewLane("w1")
	held.Add(5424, 6154, history.Flags{Working: true}, true)
	marked := history.NewLane("w2")
	marked.Add(0, 100, history.Flags{}, false)
	marked.MarkUnheld(50)
	lanes := []history.Lane{held, marked}
	markStale(lanes, []Violation{
		{Code: history.CodeStaleWrite, Worker: 1, AtMS: 6114},
		{Code: history.CodeStaleWrite, Worker: 2, AtMS: 50},
		{Code: history.CodeDuplicate, Worker: 1, AtMS: 6000},
		{Code: history.CodeStaleWrite, Worker: 3, AtMS: 1},
	})
	unheld := func(l history.Lane) (n int) {
		for _, s := range l.Segments {
			if s.State == history.LaneWorking && !s.Holds {
				n++
			}
		}
		return n
	}
	if n := unheld(lanes[0]); n != 1 {
		t.Errorf("w1: %d segments of work without the lock, want 1 (the stale write): %+v", n, lanes[0].Segments)
	}
	if n := unheld(lanes[1]); n != 1 {
		t.Errorf("w2: %d segments of work without the lock, want 1 (marked before): %+v", n, lanes[1].Segments)
	}
}
