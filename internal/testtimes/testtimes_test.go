package testtimes

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A record as go test -json writes it (gotestsum keeps it as is): build
// output mixed in, paused parallel tests, subtests.
const record = `go: downloading example.com/x v1.0.0
{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestSlow"}
{"Action":"pause","Package":"m/a","Test":"TestSlow"}
{"Action":"run","Package":"m/a","Test":"TestFast"}
{"Action":"output","Package":"m/a","Test":"TestFast","Output":"--- PASS: TestFast (0.50s)\n"}
{"Action":"pass","Package":"m/a","Test":"TestFast","Elapsed":0.5}
{"Action":"cont","Package":"m/a","Test":"TestSlow"}
{"Action":"run","Package":"m/a","Test":"TestSlow/one"}
{"Action":"pass","Package":"m/a","Test":"TestSlow/one","Elapsed":70}
{"Action":"fail","Package":"m/a","Test":"TestSlow/two","Elapsed":5}
{"Action":"fail","Package":"m/a","Test":"TestSlow","Elapsed":75.25}
{"Action":"fail","Package":"m/a","Elapsed":76}
{"Action":"skip","Package":"m/b","Test":"TestNeedsAServer","Elapsed":0}
{"Action":"pass","Package":"m/b","Elapsed":1.5}
{"Action":"skip","Package":"m/c","Elapsed":0}
`

func TestReadOrdersPackagesAndTestsWithoutSubtestsByTime(t *testing.T) {
	rep, err := Read(strings.NewReader(record))
	if err != nil {
		t.Fatal(err)
	}
	want := &Report{
		Packages: []Timing{{Package: "m/a", Action: "fail", Elapsed: 76 * time.Second}, {Package: "m/b", Action: "pass", Elapsed: 1500 * time.Millisecond}},
		Tests: []Timing{{Package: "m/a", Test: "TestSlow/one", Action: "pass", Elapsed: 70 * time.Second},
			{Package: "m/a", Test: "TestSlow/two", Action: "fail", Elapsed: 5 * time.Second},
			{Package: "m/a", Test: "TestFast", Action: "pass", Elapsed: 500 * time.Millisecond},
			{Package: "m/b", Test: "TestNeedsAServer", Action: "skip"}},
		Counts: map[string]int{"pass": 1, "fail": 1, "skip": 1, "sub-pass": 1, "sub-fail": 1},
		Empty:  1,
	}
	if d := cmp.Diff(want, rep); d != "" {
		t.Errorf("report (-want +got):\n%s", d)
	}
	var out bytes.Buffer
	rep.Write(&out, 2)
	for _, line := range []string{
		"1m16s  fail m/a\n",
		"time per package (2 with tests, 1 without):\n",
		"the 2 slowest of 4 tests without subtests (top-level tests: 1 passed, 1 failed, 1 skipped; subtests: 1 passed, 1 failed, 0 skipped):\n",
		"1m10s  pass a.TestSlow/one\n",
		"5s  fail a.TestSlow/two\n",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("the report lacks %q:\n%s", line, out.String())
		}
	}
	if strings.Contains(out.String(), "TestFast") || strings.Contains(out.String(), "TestSlow\n") {
		t.Errorf("the report lists more than the 2 slowest:\n%s", out.String())
	}
}

func TestReadRefusesABrokenEvent(t *testing.T) {
	if _, err := Read(strings.NewReader(`{"Action":"pass","Elapsed":"x"}` + "\n")); err == nil {
		t.Error("a broken event was read")
	}
}
