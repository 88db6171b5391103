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

// No function outside the tests runs over maxFuncLines lines.
func TestFunctionLength(t *testing.T) {
	t.Parallel()
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
			switch {
			case f.pkg == "components/serving" && strings.HasPrefix(fd.Name.Name, "register") && n > maxRegistrarLines:
				t.Errorf("%s is %d lines: a serving registrar keeps to one concern in %d", key, n, maxRegistrarLines)
			case n > maxFuncLines:
				t.Errorf("%s is %d lines, over %d: split it", key, n, maxFuncLines)
			}
		}
	}
	if funcs < 300 {
		t.Fatalf("measured only %d functions", funcs)
	}
}
