// Command hello prints one line: the baseline for lockctl's start-up time
// in bench/run.
package main

import "fmt"

func main() { fmt.Println("hello") }
