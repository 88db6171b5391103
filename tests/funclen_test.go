package tests

import (
	"go/ast"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function may be outside the tests, and
// maxRegistrarLines the longest of model serving's registrars (one per
// concern: engine, cache and download, scaling, exposure, network).
const (
	maxFuncLines      = 80
	maxRegistrarLines = 60
)

// longFuncs are the functions still over maxFuncLines, each with the
// length it may not exceed (issue 29 splits them). The list may only shrink: a function that fits
// fails the test until its entry goes.
var longFuncs = map[string]int{
	"stacks/config/blocks.go blocks": 113,
}

// No function outside the tests runs over maxFuncLines lines.
func TestFunctionLength(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	funcs := 0
	for _, f := range moduleFiles(t) {
		if f.test || layerGroup(f.pkg) == "test" {
			continue
		}
		for _, d := range f.ast.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			funcs++
			n := f.fset.Position(fd.End()).Line - f.fset.Position(fd.Pos()).Line + 1
			key := f.file + " " + fd.Name.Name
			limit, listed := longFuncs[key]
			switch {
			case listed && n <= maxFuncLines:
				t.Errorf("%s is %d lines now: remove it from longFuncs", key, n)
			case listed && n > limit:
				t.Errorf("%s grew to %d lines (was %d): split it", key, n, limit)
			case f.pkg == "components/serving" && strings.HasPrefix(fd.Name.Name, "register") && n > maxRegistrarLines:
				t.Errorf("%s is %d lines: a serving registrar keeps to one concern in %d", key, n, maxRegistrarLines)
			case !listed && n > maxFuncLines:
				t.Errorf("%s is %d lines, over %d: split it", key, n, maxFuncLines)
			}
			seen[key] = listed
		}
	}
	if funcs < 300 {
		t.Fatalf("measured only %d functions", funcs)
	}
	for key := range longFuncs {
		if _, ok := seen[key]; !ok && !strings.Contains(key, "_test") {
			t.Errorf("%s is gone: remove it from longFuncs", key)
		}
	}
}
