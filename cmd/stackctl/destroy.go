package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/preflight"
	"github.com/natron/gpu-node-pools/stacks/stackfile"
)

// destroyStack offboards a customer (make destroy): the engine's preview
// of the destroy, a confirmation (typing the stack's name, or -yes),
// protected resources deleted only with -unprotect, then every resource,
// the stack and its state removed; for a rendering stack, what to delete
// from the GitOps repository. The stack is in the backend of the
// environment (make env), which decrypts its state.
func destroyStack(args []string, dir string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("destroy", flag.ContinueOnError)
	stack := fs.String("stack", "", "stack name (the customer)")
	unprotect := fs.Bool("unprotect", false, "also delete protected resources (a prod stack's node pools): UNPROTECT=1")
	yes := fs.Bool("yes", false, "do not ask for confirmation (tooling that confirmed already): YES=1")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *stack == "" {
		return errors.New("make destroy: STACK (-stack) is required")
	}
	if _, err := os.Stat(stackfile.Path(dir, *stack)); err != nil {
		return fmt.Errorf("make destroy: no stack file %s", stackfile.Path(dir, *stack))
	}
	// the render's place, read before the stack file is removed
	var p *plan.Stack
	if r := preflight.Stack(dir, *stack, func(string, string) bool { return true }); r.Err() == nil {
		p = r.Plan
	}
	ctx := context.Background()
	s, err := automation.SelectStack(ctx, dir, *stack, automation.Engine{SecretsProvider: "passphrase", Progress: stdout})
	if err != nil {
		if p != nil && p.RenderDir != "" {
			// never previewed here: nothing in the backend, the render is all
			fmt.Fprintf(stdout, "Stack %s has no state in this backend (%v).\n", *stack, err)
			printGitOpsRemoval(stdout, dir, *stack, p)
			return nil
		}
		return err
	}
	confirm := func(d *automation.DestroyPlan) bool {
		fmt.Fprintf(stdout, "Destroying stack %s deletes %d resources (%d protected) and then the stack, its state and %s.\n",
			*stack, len(d.Resources), len(d.Protected), stackfile.Path(dir, *stack))
		if *yes {
			return true
		}
		fmt.Fprintf(stdout, "Type the stack's name (%s) to go on: ", *stack)
		line, _ := bufio.NewReader(stdin).ReadString('\n')
		return strings.TrimSpace(line) == *stack
	}
	d, err := automation.Offboard(ctx, s, automation.Offboarding{Unprotect: *unprotect, Confirm: confirm})
	var protected *automation.ProtectedError
	if errors.As(err, &protected) {
		return fmt.Errorf("%w\nnothing was changed; to delete them too: make destroy STACK=%s UNPROTECT=1 (stackctl destroy -stack %s -unprotect)", err, *stack, *stack)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Removed stack %s: %d resources deleted, its state and %s removed (commit that removal).\n",
		*stack, len(d.Resources), stackfile.Path(dir, *stack))
	if p != nil && p.RenderDir != "" {
		printGitOpsRemoval(stdout, dir, *stack, p)
	}
	return nil
}

// printGitOpsRemoval says what a rendering stack leaves in the GitOps
// repository (or, without a gitops block, in the clusters it was applied
// to), and how to delete it so that the objects go too.
func printGitOpsRemoval(stdout io.Writer, dir, stack string, p *plan.Stack) {
	render := p.RenderDir
	if !filepath.IsAbs(render) {
		render = filepath.Join(dir, render)
	}
	trees := []string{"workload"}
	if p.Target.ManagementCluster() {
		trees = append(trees, "management")
	}
	if p.GitOps == nil {
		fmt.Fprintf(stdout, "Stack %s rendered into %s, which you deliver yourself: delete its objects from the clusters you applied them to (kubectl delete -k on each layer of %s, last layer first), then the directory.\n",
			stack, p.RenderDir, strings.Join(trees, " and "))
		return
	}
	g := p.GitOps.Spec
	fmt.Fprintf(stdout, "The GitOps repository %s still holds this customer's render under %s/:\n", g.RepoURL, g.Path)
	for _, t := range append(trees, "gitops") {
		fmt.Fprintf(stdout, "  %s/%s/  (%s)\n", g.Path, t, countFiles(filepath.Join(render, t)))
	}
	for _, l := range gitops.Removal(g, p.GitOps.Prefix, trees) {
		fmt.Fprintln(stdout, l)
	}
	fmt.Fprintf(stdout, "Then remove the local render: rm -r %s\n", p.RenderDir)
}

// countFiles is "N files" under dir, or says the render is not here.
func countFiles(dir string) string {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		return "no local render to count"
	}
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}
