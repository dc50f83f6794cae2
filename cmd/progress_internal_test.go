package cmd

import "os"

// LOCKCTL_TEST_PROGRESS_NOW, set by a progress test for the lockctl it
// runs (this test binary), shows inspect's bar from the start of a scan.
func init() {
	if os.Getenv("LOCKCTL_TEST_PROGRESS_NOW") != "" {
		scanProgressAfter = 0
	}
}
