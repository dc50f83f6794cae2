// Command startup measures the median wall time of commands, run in turns
// so that both see the same machine load:
//
//	startup -n 51 -- 'lockctl lease --budget 1200s -o json' 'hello'
//
// It prints one line per command: "<median ms>\t<command>". Arguments are
// split on spaces (no quoting).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 51, "runs of each command")
	flag.Parse()
	cmds := flag.Args()
	if len(cmds) == 0 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: startup [-n RUNS] 'command args' ...")
		os.Exit(2)
	}
	times := make([][]time.Duration, len(cmds))
	for range *n {
		for i, c := range cmds {
			argv := strings.Fields(c)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
			start := time.Now()
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", c, err)
				os.Exit(1)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	for i, c := range cmds {
		slices.Sort(times[i])
		fmt.Printf("%.3f\t%s\n", float64(times[i][len(times[i])/2].Microseconds())/1000, c)
	}
}
