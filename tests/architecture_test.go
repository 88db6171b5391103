package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

const module = "github.com/natron/gpu-node-pools/"

// goFile is one parsed Go file of the module.
type goFile struct {
	file    string // relative to the module root
	pkg     string // the package's directory, relative to the module root
	test    bool
	imports []string
	ast     *ast.File
	fset    *token.FileSet // positions of ast
}

// moduleFiles parses every Go file of the module.
func moduleFiles(t *testing.T) []goFile {
	t.Helper()
	root := pulumitest.RepoRoot()
	fset := token.NewFileSet()
	var out []goFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		gf := goFile{file: filepath.ToSlash(rel), pkg: filepath.ToSlash(filepath.Dir(rel)), test: strings.HasSuffix(p, "_test.go"), ast: f, fset: fset}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			gf.imports = append(gf.imports, path)
		}
		out = append(out, gf)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("found only %d Go files under %s", len(out), root)
	}
	return out
}

// calls counts a file's calls of a method or package function by name
// (x.Name(...)).
func calls(f goFile, name string) int {
	n := 0
	ast.Inspect(f.ast, func(node ast.Node) bool {
		if c, ok := node.(*ast.CallExpr); ok {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == name {
				n++
			}
		}
		return true
	})
	return n
}

// The package boundaries the architecture rests on (issue 10): arrows point
// from the program down to the components, never back; the targets are
// plug-ins reached through their registry; and the facts that the plan
// decides are decided nowhere else.
func TestArchitecture(t *testing.T) {
	t.Parallel()
	files := moduleFiles(t)
	checked := map[string]int{}
	for _, f := range files {
		at := f.file
		for _, imp := range f.imports {
			rel, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			switch {
			case strings.HasPrefix(f.pkg, "components/") && (strings.HasPrefix(rel, "stacks") || rel == "internal/testkit/stacktest"):
				t.Errorf("%s imports %s: components know nothing of stacks or the stack files", at, imp)
			case f.pkg == "components/serving" && rel == "components/platform", f.pkg == "components/platform" && rel == "components/serving":
				t.Errorf("%s imports %s: serving and platform share only the components below them", at, imp)
			case !f.test && !strings.HasPrefix(f.pkg, "internal/testkit") && isTargetPackage(rel) && f.pkg != "stacks/target/registry" && !strings.HasPrefix(f.pkg, rel):
				t.Errorf("%s imports %s: the program reaches targets through stacks/target/registry", at, imp)
			case !f.test && !strings.HasPrefix(f.pkg, "internal/testkit") && strings.HasPrefix(rel, "internal/testkit"):
				t.Errorf("%s imports the test kit %s outside a test", at, imp)
			}
			checked["imports"]++
		}
		if strings.HasPrefix(f.pkg, "components/") && !f.test {
			ast.Inspect(f.ast, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.Contains(lit.Value, "Pulumi.") {
					t.Errorf("%s mentions a stack file (%s): components take their settings as arguments", at, lit.Value)
				}
				return true
			})
		}
		if f.test || strings.HasPrefix(f.pkg, "internal/testkit") { // tests and their kits make fixtures
			continue
		}
		// Defaults are decided once, when the plan is made.
		if n := calls(f, "Defaults"); n > 0 && f.pkg != "stacks/plan" {
			t.Errorf("%s calls Defaults %d times: defaults are filled in stacks/plan only", at, n)
		}
		// The catalog's one lookup is made when the plan resolves the pools.
		if n := calls(f, "SKU"); n > 0 && f.pkg != "stacks/plan" && f.pkg != "internal/catalog" {
			t.Errorf("%s looks a SKU up %d times: only stacks/plan resolves pools", at, n)
		}
		checked["files"]++
	}
	if checked["imports"] < 100 || checked["files"] < 40 {
		t.Fatalf("checked only %v", checked)
	}
	// The checks see what they look for: the plan does call both.
	for _, f := range files {
		if f.pkg == "stacks/plan" && !f.test && calls(f, "Defaults") > 0 && calls(f, "SKU") > 0 {
			return
		}
	}
	t.Error("stacks/plan calls neither Defaults nor the SKU lookup in one file: the checks above look for the wrong names")
}

// isTargetPackage reports whether a package is a target's own (under
// stacks/target/, not the interface or the registry).
func isTargetPackage(rel string) bool {
	name, ok := strings.CutPrefix(rel, "stacks/target/")
	return ok && name != "registry" && !strings.Contains(name, "/")
}
