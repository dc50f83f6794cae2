// Command lockctl inspects, simulates, reviews and safely uses Redis locks.
package main

import (
	"os"

	"github.com/lockctl/lockctl/cmd"
)

func main() { os.Exit(cmd.Execute(os.Args[1:], cmd.SystemIO())) }
