package owner

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

func TestParseRoundTrip(t *testing.T) {
	id := ID{PID: 4242, Start: 987654, Boot: "1a2b3c4d"}
	got, ok := Parse(id.String())
	if !ok || got != id {
		t.Fatalf("Parse(%q) = %+v, %v", id.String(), got, ok)
	}
	for _, bad := range []string{"", "a1b2c3d4e5f6", "12_34", "012_34_ab", "12_34_XYZ", "12_34_123456789", "-1_2_ab", "1_2_ab_c"} {
		if _, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) accepted: a name lockctl did not make must be left alone", bad)
		}
	}
}

// A live process is not gone; once it exited and was reaped it is, and so
// is the same pid with another start time or another boot.
func TestGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	self := Self()
	if gone, why := self.Gone(); gone {
		t.Fatalf("this process is gone: %s", why)
	}
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dead := ID{PID: c.Process.Pid, Start: 1, Boot: self.Boot}
	if gone, why := dead.Gone(); !gone {
		t.Errorf("exited pid %d not gone: %s", dead.PID, why)
	}
	for _, id := range []ID{{PID: os.Getpid(), Start: self.Start + 1, Boot: self.Boot}, {PID: os.Getpid(), Start: self.Start, Boot: "ffffffff"}} {
		if id.Boot == self.Boot && id.Start == self.Start {
			continue
		}
		if gone, why := id.Gone(); !gone {
			t.Errorf("%+v not gone (%s): another start time or boot is another process", id, why)
		}
	}
}
