// Command testtimes prints where a test run's time went: each package's
// time and the slowest tests, from the `go test -json` record that
// make test keeps (gotestsum --jsonfile).
//
//	go run ./cmd/testtimes [-n 20] test-timings.json
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/natron/gpu-node-pools/internal/testtimes"
)

func main() {
	n := flag.Int("n", 20, "how many of the slowest tests to list")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: testtimes [-n 20] <go test -json file>")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(1)
	}
	defer f.Close()
	rep, err := testtimes.Read(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testtimes: %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
	rep.Write(os.Stdout, *n)
}
