// Command lockctl-exporter is lockctl with the Prometheus exporter linked
// in: `lockctl exporter` runs it, so that the Prometheus client's package
// inits run only for that command (exporter's package comment says why).
package main

import (
	"os"

	"github.com/lockctl/lockctl/cmd"
	_ "github.com/lockctl/lockctl/exporter/prom" // registers the exporter's Service
)

func main() { os.Exit(cmd.Execute(os.Args[1:], cmd.SystemIO())) }
