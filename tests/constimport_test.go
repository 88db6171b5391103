package tests

import (
	"go/ast"
	"go/token"
	"path"
	"sort"
	"strings"
	"testing"
)

// No package imports a component, target or other non-library package of
// the module only for constants: a constant two packages share belongs in
// a library below both, or the importer states its own fact (as the
// targets do for egress). Libraries of shared conventions (kube) are
// there to be imported for their constants.
func TestNoImportOnlyForConstants(t *testing.T) {
	t.Parallel()
	files := moduleFiles(t)
	consts := map[string]map[string]bool{} // package -> its constants
	for _, f := range files {
		if f.test {
			continue
		}
		for _, d := range f.ast.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						if consts[f.pkg] == nil {
							consts[f.pkg] = map[string]bool{}
						}
						consts[f.pkg][n.Name] = true
					}
				}
			}
		}
	}
	// used[importer][imported] is what the importer uses of the package.
	used := map[string]map[string]map[string]bool{}
	for _, f := range files {
		if f.test || layerGroup(f.pkg) == "test" {
			continue
		}
		local := map[string]string{} // the name a file uses -> package
		for _, imp := range f.ast.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			rel, ours := strings.CutPrefix(p, module)
			if !ours {
				continue
			}
			name := path.Base(rel)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			local[name] = rel
			if used[f.pkg] == nil {
				used[f.pkg] = map[string]map[string]bool{}
			}
			if used[f.pkg][rel] == nil {
				used[f.pkg][rel] = map[string]bool{}
			}
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && local[x.Name] != "" {
					used[f.pkg][local[x.Name]][sel.Sel.Name] = true
				}
			}
			return true
		})
	}
	pairs := 0
	for importer, deps := range used {
		for dep, names := range deps {
			pairs++
			if len(names) == 0 || layerGroup(dep) == "library" {
				continue // a blank import, or a library of conventions
			}
			onlyConsts := true
			for n := range names {
				onlyConsts = onlyConsts && consts[dep][n]
			}
			if onlyConsts {
				list := make([]string, 0, len(names))
				for n := range names {
					list = append(list, n)
				}
				sort.Strings(list)
				t.Errorf("%s imports %s only for constants %v", importer, dep, list)
			}
		}
	}
	if pairs < 60 {
		t.Fatalf("saw only %d package imports", pairs)
	}
}
