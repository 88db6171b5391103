package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/preflight"
)

// Offboarding a rendering stack names what its GitOps repository still
// holds, tree by tree, and how to delete it so that the objects go too:
// Argo CD's Applications (named as the render names them) get the
// resources finalizer first; Flux's pruning Kustomizations need nothing.
// (make destroy through the engine: tests/offboard_test.go.)
func TestDestroyListsTheGitOpsFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool string
		want []string
	}{
		{"argocd", []string{
			"The GitOps repository https://git.example/acme.git still holds this customer's render under clusters/acme/gpu/:",
			"  clusters/acme/gpu/workload/  (2 files)",
			"  clusters/acme/gpu/management/  (1 file)",
			"  clusters/acme/gpu/gitops/  (no local render to count)",
			`  kubectl -n argocd patch applications.argoproj.io acme-gpu-workload --type merge -p '{"metadata":{"finalizers":["resources-finalizer.argocd.argoproj.io"]}}'`,
			`  kubectl -n argocd patch applications.argoproj.io acme-gpu-management --type merge`,
			"then delete clusters/acme/gpu/ in one commit",
			"Then remove the local render: rm -r rendered",
		}},
		{"flux", []string{
			"  clusters/acme/gpu/workload/  (2 files)",
			"Delete clusters/acme/gpu/ in one commit: the Kustomizations of clusters/acme/gpu/gitops prune",
		}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			t.Parallel()
			text := stacktest.NatronRenderHead + `  gpu-node-pools:pools:
    - {name: infer, sku: h100-80gb-x8, minNodes: 0, maxNodes: 2}
  gpu-node-pools:gitops:
    tool: ` + tc.tool + `
    repoURL: https://git.example/acme.git
    allowedHosts: [git.example]
    path: clusters/acme/gpu
    workloadCluster: acme
`
			dir := stacktest.Project(t, map[string]string{"acme": text})
			for _, f := range []string{"workload/1-namespaces-crds/a.yaml", "workload/kustomization.yaml", "management/2-resources/b.yaml"} {
				p := filepath.Join(dir, "rendered", f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := preflight.Stack(dir, "acme", func(string, string) bool { return true })
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			printGitOpsRemoval(&out, dir, "acme", r.Plan)
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("no %q in:\n%s", w, out.String())
				}
			}
		})
	}
}

// make destroy names the stack it needs, and a stack that has no file.
func TestDestroyNeedsAStack(t *testing.T) {
	t.Parallel()
	dir := stacktest.Project(t, nil)
	for args, want := range map[string]string{
		"":             "STACK (-stack) is required",
		"-stack ghost": "no stack file",
	} {
		var out, errs bytes.Buffer
		if code := run(append([]string{"destroy"}, strings.Fields(args)...), dir, strings.NewReader(""), &out, &errs); code != 1 || !strings.Contains(errs.String(), want) {
			t.Errorf("destroy %s: exit %d, %q; want %q", args, code, errs.String(), want)
		}
	}
}
