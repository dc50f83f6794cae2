// Command lockctl-store is lockctl with trial/store and its SQL drivers
// (pgx, go-sql-driver/mysql, modernc.org/sqlite) linked in: `lockctl trial
// --store` and `lockctl diagnose --store` run it, so that the drivers'
// package inits run only for those (trial/storeapi's package comment says
// why).
package main

import (
	"os"

	"github.com/lockctl/lockctl/cmd"
	_ "github.com/lockctl/lockctl/trial/store" // registers the SQL store with storeapi
)

func main() { os.Exit(cmd.Execute(os.Args[1:], cmd.SystemIO())) }
