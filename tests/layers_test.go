package tests

import (
	"fmt"
	"go/ast"
	"go/token"
	"slices"
	"sort"
	"strings"
	"testing"
)

// layer ranks a non-test package of the module: a package imports only
// packages of a lower rank, or of its own rank in the same group
// (components build on components, libraries on libraries). Libraries
// (internal/, the stack-file reader) are pure Go with no component in
// them; Pulumi components sit on libraries; the target interface on
// components; each target on the interface; the registry on the
// targets; config, plan and program above; commands at the top. Test
// kits are test code: they are ranked as tests, above everything.
func layer(pkg string) (rank int, group string) {
	switch {
	case strings.HasPrefix(pkg, "internal/testkit"), pkg == "tests":
		return 100, "test"
	case strings.HasPrefix(pkg, "internal/"), pkg == "stacks/stackfile", pkg == "stacks/fleet":
		return 0, "library"
	case strings.HasPrefix(pkg, "components/"):
		return 1, "component"
	case pkg == "stacks/target":
		return 2, "target interface"
	case pkg == "stacks/target/registry":
		return 4, "registry"
	case strings.HasPrefix(pkg, "stacks/target/"):
		return 3, "target"
	case pkg == "stacks/config":
		return 5, "config"
	case pkg == "stacks/plan":
		return 6, "plan"
	case pkg == "stacks/preflight", pkg == "stacks/scaffold":
		return 7, "checks"
	case pkg == "stacks/program":
		return 8, "program"
	case pkg == "stacks/automation":
		return 9, "automation"
	case strings.HasPrefix(pkg, "cmd/"), pkg == ".":
		return 10, "command"
	}
	return -1, ""
}

// The import graph points one way: no library imports a component,
// nothing imports a package above it, a target imports no other target,
// only the registry imports a target, and there are no cycles.
func TestLayers(t *testing.T) {
	t.Parallel()
	graph := map[string]map[string]bool{}
	edges := 0
	for _, f := range moduleFiles(t) {
		if f.test {
			continue
		}
		from, fromGroup := layer(f.pkg)
		if from < 0 {
			t.Errorf("%s: package %s has no layer; add it to layer()", f.file, f.pkg)
			continue
		}
		for _, imp := range f.imports {
			rel, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			to, toGroup := layer(rel)
			switch {
			case fromGroup == "library" && toGroup == "component":
				t.Errorf("%s imports %s: a library imports no component", f.file, rel)
			case to > from || (to == from && fromGroup == "target" && !strings.HasPrefix(f.pkg, rel) && !strings.HasPrefix(rel, f.pkg)):
				t.Errorf("%s (%s) imports %s (%s): imports point down", f.file, fromGroup, rel, toGroup)
			case toGroup == "target" && fromGroup != "target" && fromGroup != "registry" && fromGroup != "test":
				t.Errorf("%s imports target %s: only the registry names targets (registry.Lookup, registry.All)", f.file, rel)
			}
			if graph[f.pkg] == nil {
				graph[f.pkg] = map[string]bool{}
			}
			graph[f.pkg][rel] = true
			edges++
		}
	}
	if edges < 100 {
		t.Fatalf("saw only %d imports of the module's packages", edges)
	}
	if cycle := findCycle(graph); cycle != nil {
		t.Errorf("import cycle: %s", strings.Join(cycle, " -> "))
	}
}

// findCycle returns one cycle of the graph, or nil.
func findCycle(graph map[string]map[string]bool) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = open
		path = append(path, n)
		next := make([]string, 0, len(graph[n]))
		for m := range graph[n] {
			next = append(next, m)
		}
		sort.Strings(next)
		for _, m := range next {
			switch state[m] {
			case open:
				i := slices.Index(path, m)
				return append(slices.Clone(path[i:]), m)
			case unseen:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return nil
	}
	nodes := make([]string, 0, len(graph))
	for n := range graph {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		if state[n] == unseen {
			if c := visit(n); c != nil {
				return c
			}
		}
	}
	return nil
}

// The cycle finder finds a cycle where there is one and none where there
// is none, so that TestLayers can fail.
func TestFindCycle(t *testing.T) {
	t.Parallel()
	acyclic := map[string]map[string]bool{"a": {"b": true, "c": true}, "b": {"c": true}}
	if c := findCycle(acyclic); c != nil {
		t.Errorf("cycle %v in an acyclic graph", c)
	}
	cyclic := map[string]map[string]bool{"a": {"b": true}, "b": {"c": true}, "c": {"a": true}}
	if c := findCycle(cyclic); len(c) != 4 || c[0] != c[3] {
		t.Errorf("findCycle = %v, want a -> b -> c -> a", c)
	}
}

// targetIdentifiers are names only a target's own package may use: its
// catalog section, price table, taints and workload identity.
var targetIdentifiers = []string{
	"\naks.", "\nnatron.", `"aks"`, `"natron"`,
	"azure.workload.identity", "scalesetpriority", "kubernetes.azure.com", "metal3.io", "x-k8s.io", "cluster-api",
}

// stillLeaking are the places that name a target's identifier today; the
// list may only shrink (an entry that no longer leaks fails the test too).
// It is empty: the download Job carried Azure's workload-identity label on
// every target until its template changed (issue 30 keys it by source).
var stillLeaking = map[string]bool{}

// Nothing outside stacks/target names a target's own identifiers: a third
// target is new files and one registry line. Tests and their kits make
// fixtures for each target and may.
func TestTargetIdentifiersStayInTargets(t *testing.T) {
	t.Parallel()
	found := map[string]bool{}
	for _, f := range moduleFiles(t) {
		if f.test || strings.HasPrefix(f.pkg, "stacks/target") || layerGroup(f.pkg) == "test" {
			continue
		}
		src := "\n" + source(f) // a selector starts a line: "\naks." is package aks's
		for _, id := range targetIdentifiers {
			if strings.Contains(src, id) {
				found[f.file+": "+strings.TrimPrefix(id, "\n")] = true
			}
		}
	}
	for k := range found {
		if !stillLeaking[k] {
			t.Errorf("%s: a target's own identifier outside stacks/target; the target should provide it", k)
		}
	}
	for k := range stillLeaking {
		if !found[k] {
			t.Errorf("%s no longer leaks: remove it from stillLeaking", k)
		}
	}
}

func layerGroup(pkg string) string { _, g := layer(pkg); return g }

// source is a file's code without its comments (a comment may name a
// target to explain).
func source(f goFile) string {
	var b strings.Builder
	ast.Inspect(f.ast, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				fmt.Fprintf(&b, "%s.%s\n", x.Name, n.Sel.Name)
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				b.WriteString(n.Value + "\n")
			}
		}
		return true
	})
	return b.String()
}

// Charts are installed one way, and components start one way: helm.Install
// is the only caller of the Helm v4 Chart resource outside the tests, and
// component.Start the only caller of RegisterComponentResource (so every
// component refuses missing args before registering, and parents its
// children alike).
func TestOneWayToRegister(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		call, owner, raw string
		least            int
	}{
		{"helm.Install", "internal/helm", ".NewChart", 8},
		{"component.Start", "internal/component", ".RegisterComponentResource", 9},
	} {
		calls := 0
		for _, f := range moduleFiles(t) {
			if f.test || layerGroup(f.pkg) == "test" {
				continue
			}
			src := source(f)
			calls += strings.Count(src, tc.call+"\n")
			if f.pkg != tc.owner && strings.Contains(src, tc.raw+"\n") {
				t.Errorf("%s calls %s itself: use %s", f.file, tc.raw, tc.call)
			}
		}
		if calls < tc.least {
			t.Errorf("found %d calls of %s, want at least %d", calls, tc.call, tc.least)
		}
	}
}
