package contain

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// cgroupBase is the cgroup v2 directory this process is in (its line
// "0::/path" in /proc/self/cgroup under the cgroup2 mount in
// /proc/self/mountinfo), or an error saying why there is none.
func cgroupBase() (string, error) {
	mount := ""
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// proc(5): ... mount-point ... - fstype source options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if fs := strings.Fields(pre); ok && strings.HasPrefix(post, "cgroup2 ") && len(fs) > 4 {
			mount = fs[4]
			break
		}
	}
	if mount == "" {
		return "", errors.New("no cgroup2 mount")
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "0::"); ok {
			return filepath.Join(mount, rest), nil
		}
	}
	return "", errors.New("not in a cgroup v2 hierarchy")
}

// makeCgroup creates dir as a cgroup with a freezer and kill: an error when
// it cannot (read-only, not delegated, kernel before 5.14).
func makeCgroup(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"cgroup.freeze", "cgroup.kill", "cgroup.procs"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			_ = os.Remove(dir)
			return fmt.Errorf("cgroup %s has no %s", dir, f)
		}
	}
	return nil
}

// writeCgroup writes value into dir's control file.
func writeCgroup(dir, file, value string) error {
	return os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644)
}

// cgroupEvent reports dir's cgroup.events key ("frozen", "populated") is 1.
func cgroupEvent(dir, key string) bool {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	return strings.Contains("\n"+string(b), "\n"+key+" 1")
}

// waitCgroup waits up to d for cgroup.events' key to become want.
func waitCgroup(dir, key string, want bool, d time.Duration) bool {
	for end := time.Now().Add(d); ; time.Sleep(2 * time.Millisecond) {
		if cgroupEvent(dir, key) == want {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// removeCgroup kills what is left in dir, waits up to 2s until it is
// empty and removes it.
func removeCgroup(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	_ = writeCgroup(dir, "cgroup.kill", "1")
	waitCgroup(dir, "populated", false, 2*time.Second)
	return os.Remove(dir)
}
