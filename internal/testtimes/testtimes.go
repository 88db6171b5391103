// Package testtimes reads a `go test -json` record (test2json events, as
// gotestsum's --jsonfile keeps them) and says where the time went: each
// package's time and the slowest tests.
package testtimes

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Timing is one package's or one test's result and time.
type Timing struct {
	Package string
	Test    string // empty for a package
	Action  string // pass, fail or skip
	Elapsed time.Duration
}

// Name is the package's short name, with the test's after a dot.
func (t Timing) Name() string {
	name := t.Package[strings.LastIndex(t.Package, "/")+1:]
	if t.Test != "" {
		name += "." + t.Test
	}
	return name
}

// Report is a run's timings.
type Report struct {
	Packages []Timing // by time, the longest first
	// Tests are the tests that have no subtests, the longest first: a
	// parent's time says little (one whose subtests run in parallel
	// reports none).
	Tests  []Timing
	Counts map[string]int // top-level tests by result; subtests as sub-<result>
	Empty  int            // packages without tests
}

type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
}

// Read reads the events; lines that are not events (a build's output
// mixed in) are passed over.
func Read(r io.Reader) (*Report, error) {
	rep := &Report{Counts: map[string]int{}}
	var tests []Timing
	parents := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("a test event: %w", err)
		}
		if e.Action != "pass" && e.Action != "fail" && e.Action != "skip" {
			continue
		}
		t := Timing{Package: e.Package, Test: e.Test, Action: e.Action, Elapsed: time.Duration(e.Elapsed * float64(time.Second))}
		switch {
		case e.Test == "" && e.Action == "skip" && e.Elapsed == 0:
			rep.Empty++ // no test files
		case e.Test == "":
			rep.Packages = append(rep.Packages, t)
		case !strings.Contains(e.Test, "/"):
			tests = append(tests, t)
			rep.Counts[e.Action]++
		default:
			tests = append(tests, t)
			rep.Counts["sub-"+e.Action]++
			for name := e.Test; strings.Contains(name, "/"); {
				name = name[:strings.LastIndex(name, "/")]
				parents[e.Package+"."+name] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, t := range tests {
		if !parents[t.Package+"."+t.Test] {
			rep.Tests = append(rep.Tests, t)
		}
	}
	for _, list := range [][]Timing{rep.Packages, rep.Tests} {
		sort.SliceStable(list, func(i, j int) bool { return list[i].Elapsed > list[j].Elapsed })
	}
	return rep, nil
}

// Write prints each package's time and the n slowest tests.
func (r *Report) Write(w io.Writer, n int) {
	fmt.Fprintf(w, "\ntime per package (%d with tests, %d without):\n", len(r.Packages), r.Empty)
	for _, p := range r.Packages {
		fmt.Fprintf(w, "  %8s  %-4s %s\n", round(p.Elapsed), p.Action, p.Package)
	}
	fmt.Fprintf(w, "\nthe %d slowest of %d tests without subtests (top-level tests: %d passed, %d failed, %d skipped; subtests: %d passed, %d failed, %d skipped):\n",
		min(n, len(r.Tests)), len(r.Tests), r.Counts["pass"], r.Counts["fail"], r.Counts["skip"],
		r.Counts["sub-pass"], r.Counts["sub-fail"], r.Counts["sub-skip"])
	for _, t := range r.Tests[:min(n, len(r.Tests))] {
		fmt.Fprintf(w, "  %8s  %-4s %s\n", round(t.Elapsed), t.Action, t.Name())
	}
}

func round(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(10 * time.Millisecond)
}
