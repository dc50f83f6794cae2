package history_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lockctl/lockctl/history"
)

func ptr[T any](v T) *T { return &v }

// TestLaneAdd: alike stretches merge, a gap stretches the last segment (the
// holder was unchanged), and the JSON of an empty lane is [].
func TestLaneAdd(t *testing.T) {
	l := history.NewLane("A")
	if b, _ := json.Marshal(l); string(b) != `{"actor":"A","segments":[]}` {
		t.Fatalf("empty lane = %s", b)
	}
	l.Add(0, 100, history.Flags{Working: true}, true)
	l.Add(100, 200, history.Flags{Working: true}, true)
	l.Add(300, 400, history.Flags{Working: true, Paused: true}, true)
	l.Add(400, 500, history.Flags{Working: true, Partitioned: true, Call: true}, false)
	l.Close(600)
	l.MarkUnheld(450)
	want := []history.Segment{
		{FromMS: 0, ToMS: 300, State: history.LaneWorking, Holds: true},
		{FromMS: 300, ToMS: 400, State: history.LanePaused, Holds: true},
		{FromMS: 400, ToMS: 600, State: history.LaneCall},
		{FromMS: 450, ToMS: 451, State: history.LaneWorking},
	}
	if !reflect.DeepEqual(l.Segments, want) {
		t.Errorf("segments = %+v\nwant %+v", l.Segments, want)
	}
}

func TestFlagsState(t *testing.T) {
	for _, c := range []struct {
		f    history.Flags
		want string
	}{
		{history.Flags{}, history.LaneIdle},
		{history.Flags{Working: true}, history.LaneWorking},
		{history.Flags{Working: true, Partitioned: true}, history.LanePartitioned},
		{history.Flags{Working: true, Partitioned: true, Call: true}, history.LaneCall},
		{history.Flags{Working: true, Paused: true}, history.LanePaused},
		{history.Flags{Crashed: true, Paused: true}, history.LaneCrashed},
	} {
		if got := c.f.State(); got != c.want {
			t.Errorf("%+v: %s, want %s", c.f, got, c.want)
		}
	}
}

// TestStaleWrites: a fence below the highest earlier one of the same
// resource is stale; other resources and writes without a fence are not.
func TestStaleWrites(t *testing.T) {
	ws := []history.Write{
		{Fence: ptr[int64](5), Resource: "a"},
		{Fence: ptr[int64](3), Resource: "b"},
		{Fence: ptr[int64](4), Resource: "a"},
		{Resource: "a"},
		{Fence: ptr[int64](5), Resource: "a"},
		{Fence: ptr[int64](2), Resource: "b"},
	}
	want := []history.Stale{{Write: 2, After: 0}, {Write: 5, After: 1}}
	if got := history.StaleWrites(ws); !reflect.DeepEqual(got, want) {
		t.Errorf("StaleWrites = %v, want %v", got, want)
	}
}

// TestDuplicateKeys: one group per repeated key, in the order of its second
// write.
func TestDuplicateKeys(t *testing.T) {
	ws := []history.Write{{Key: ptr("x")}, {Key: ptr("y")}, {}, {Key: ptr("y")}, {Key: ptr("x")}, {Key: ptr("x")}, {Key: ptr("z")}}
	want := [][]int{{1, 3}, {0, 4, 5}}
	if got := history.DuplicateKeys(ws); !reflect.DeepEqual(got, want) {
		t.Errorf("DuplicateKeys = %v, want %v", got, want)
	}
}
