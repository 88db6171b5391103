// Command stackctl starts and checks customer stacks before the engine
// sees them (make stack, make preview):
//
//	stackctl new -name acme -target natron -cluster acme ...   # writes Pulumi.acme.yaml
//	stackctl check -stack acme                                  # config, secrets, plugins
//	stackctl render -stack acme                                 # the complete render tree
//	stackctl cost -stack acme -base ../base                     # monthly cost against the base branch
//	stackctl stacks                                             # the stacks (Pulumi.*.yaml), as JSON
//	stackctl gitops -stack acme                                 # where the render is published, as shell variables
//	gpu-plan ... --format yaml | stackctl add-model -stack acme # a planner design into the stack file, then what is missing
//	stackctl destroy -stack acme [-unprotect] [-yes]            # offboard: delete everything, then the stack and its state
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"

	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/preflight"
	"github.com/natron/gpu-node-pools/stacks/scaffold"
	"github.com/natron/gpu-node-pools/stacks/stackfile"
	"github.com/natron/gpu-node-pools/stacks/target"
	"github.com/natron/gpu-node-pools/stacks/target/registry"
)

func main() { os.Exit(run(os.Args[1:], ".", os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, dir string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: stackctl new|check|render|cost|stacks|gitops|add-model|destroy [flags]")
		return 2
	}
	var err error
	switch args[0] {
	case "new":
		err = newStack(args[1:], dir, stdout)
	case "check":
		err = checkStack(args[1:], dir, stdout, stderr)
	case "render":
		err = renderStack(args[1:], dir, stdout)
	case "cost":
		err = costChange(args[1:], dir, stdout)
	case "stacks":
		err = listStacks(dir, stdout)
	case "gitops":
		err = gitopsTarget(args[1:], dir, stdout)
	case "add-model":
		err = addModel(args[1:], dir, stdin, stdout)
	case "destroy":
		err = destroyStack(args[1:], dir, stdin, stdout)
	case "fleet":
		err = fleetCmd(args[1:], dir, stdin, stdout)
	default:
		err = fmt.Errorf("unknown command %q: new, check, render, cost, stacks, gitops, add-model, destroy or fleet", args[0])
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func newStack(args []string, dir string, stdout io.Writer) error {
	var o scaffold.Options
	fs := flag.NewFlagSet("new", flag.ContinueOnError)
	fs.StringVar(&o.Name, "name", "", "stack name (the customer)")
	fs.StringVar(&o.Target, "target", "", strings.Join(registry.Names(), " or "))
	fs.StringVar(&o.Cluster, "cluster", "", "the cluster the pools join")
	fs.StringVar(&o.RenderDir, "render-dir", "", "render YAML for GitOps into this directory instead of applying")
	fromEnv := fs.Bool("answers-from-env", false, "take a target question's answer from its make variable in the environment (RESOURCE_GROUP, K8S_VERSION, ...) when its flag is not given")
	// each target asks its own questions (target.Scaffold)
	questions := scaffold.Questions()
	answers := make([]string, len(questions))
	for i, q := range questions {
		fs.StringVar(&answers[i], q.Flag, "", q.Help+" ("+q.Var+")")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Answers = map[string]string{}
	for i, q := range questions {
		if answers[i] == "" && *fromEnv {
			answers[i] = os.Getenv(q.Var)
		}
		o.Answers[q.Flag] = answers[i]
	}
	if p := o.Problems(); len(p) > 0 {
		return errors.New("make stack: " + strings.Join(p, "; "))
	}
	path := stackfile.Path(dir, o.Name)
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s exists: choose another NAME, or edit it", path)
	}
	text, err := scaffold.File(o)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return err
	}
	// The answers make a valid stack once its secrets are set; anything
	// else is a wrong answer, and no file is left behind.
	r := preflight.Stack(dir, o.Name, func(string, string) bool { return true })
	var wrong []string
	for _, e := range r.Errors {
		for _, line := range strings.Split(e, "\n") {
			if strings.HasPrefix(line, "  ") && !secretLine(line, scaffold.Secrets(o)) {
				wrong = append(wrong, asTyped(line, questions))
			}
		}
	}
	if len(wrong) > 0 {
		_ = os.Remove(path)
		return errors.New("make stack: the answers make an invalid stack:\n" + strings.Join(wrong, "\n"))
	}
	fmt.Fprintf(stdout, "wrote %s\nnext:\n", path)
	for _, s := range scaffold.NextSteps(o) {
		fmt.Fprintln(stdout, "  "+s)
	}
	return nil
}

// asTyped names a problem with a target question's answer by the make
// variable and flag the user typed, then the config key it became.
func asTyped(line string, questions []target.Question) string {
	for _, q := range questions {
		key := config.Key(q.Key)
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), key+":"); q.Key != "" && ok {
			return fmt.Sprintf("  %s (-%s, the stack's %s):%s", q.Var, q.Flag, key, rest)
		}
	}
	return line
}

func secretLine(line string, secrets []string) bool {
	for _, s := range secrets {
		if strings.HasPrefix(strings.TrimSpace(line), s+":") {
			return true
		}
	}
	return false
}

func checkStack(args []string, dir string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	stack := fs.String("stack", "", "stack name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r := preflight.Check(dir, *stack, preflight.PluginInstalled, os.Getenv)
	for _, w := range r.Warnings {
		fmt.Fprintln(stderr, "warning: "+w)
	}
	if err := r.Err(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stack %s: config valid\n", *stack)
	for _, l := range preflight.Summary(r.Plan) {
		fmt.Fprintln(stdout, "  "+l)
	}
	return nil
}

// renderStack renders a stack with renderDir (automation.Render: the
// complete tree of its current config, whatever the state), printing one
// line per object written and what changed since the last render. The
// stack exists in the backend of the environment (make preview selects or
// creates it), which decrypts its secure values.
func renderStack(args []string, dir string, stdout io.Writer) error {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	stack := fs.String("stack", "", "stack name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx := context.Background()
	objects := 0
	getenv, err := fleetGetenv()
	if err != nil {
		return err
	}
	e, err := automation.Engine{OnEvent: func(_ string, ev events.EngineEvent) {
		// objects, not the providers, components and charts around them
		if o := ev.ResOutputsEvent; o != nil && strings.HasPrefix(o.Metadata.Type, "kubernetes:") && o.Metadata.Type != "kubernetes:helm.sh/v4:Chart" {
			objects++
		}
	}}.ForStack(dir, *stack, getenv)
	if err != nil {
		return fmt.Errorf("stack %s: %w", *stack, err)
	}
	cfg, err := automation.LoadStack(ctx, dir, *stack, e)
	if err != nil {
		return err
	}
	r, err := automation.Render(ctx, *stack, cfg, e)
	if err != nil {
		return err
	}
	printRender(stdout, *stack, objects, r)
	return nil
}

// printRender shows what a render changed: one line per file added,
// changed or removed (every file, the first time), then one line of
// summary, where the outputs went and the Secrets to provide.
func printRender(stdout io.Writer, stack string, objects int, r *automation.Rendered) {
	for _, c := range []struct {
		mark, what string
		files      []string
	}{{"+", "added", r.Added}, {"~", "changed", r.Changed}, {"-", "removed", r.Removed}} {
		for _, f := range c.files {
			fmt.Fprintf(stdout, " %s  %s %s\n", c.mark, f, c.what)
		}
	}
	change := fmt.Sprintf("%d added, %d changed, %d removed", len(r.Added), len(r.Changed), len(r.Removed))
	switch {
	case r.First:
		change = "first render"
	case len(r.Added)+len(r.Removed)+len(r.Changed) == 0:
		change = "unchanged since the last render"
	}
	fmt.Fprintf(stdout, "Rendered stack %s into %s: %s (%d objects in %d files; apply or sync each tree layer by layer, docs/rendering.md).\n",
		stack, r.Dir, change, objects, r.Files)
	if r.First {
		fmt.Fprintf(stdout, "  %s/workload    objects for the workload cluster\n", r.Dir)
		fmt.Fprintf(stdout, "  %s/management  Cluster API objects for the management cluster\n", r.Dir)
		if _, err := os.Stat(filepath.Join(r.Dir, "gitops")); err == nil {
			fmt.Fprintf(stdout, "  %s/gitops      the Argo CD Applications or Flux Kustomizations that sync them\n", r.Dir)
		}
	}
	fmt.Fprintf(stdout, "Stack outputs (%s) in %s.\n", strings.Join(slices.Sorted(maps.Keys(r.Outputs)), ", "), filepath.Join(r.Dir, automation.OutputsFile))
	if list, ok := r.ExternalSecrets.([]any); ok && len(list) > 0 {
		// the program says where each Secret comes from: a store entry
		// the render's ExternalSecrets read, or nothing (create it)
		first, _ := list[0].(map[string]any)
		if store, ok := first["store"]; ok {
			fmt.Fprintf(stdout, "Secrets come from %v through the render's ExternalSecrets; the store needs these entries (each key a property):\n", store)
		} else {
			fmt.Fprintln(stdout, "Secrets are not written to files; create these with your secret manager (or set gitops.externalSecrets):")
		}
		for _, e := range list {
			m, _ := e.(map[string]any)
			if k, ok := m["storeKey"]; ok {
				// the render writes the type and the values that are not secret
				fmt.Fprintf(stdout, "  %v  keys: %v\n", k, m["keys"])
				continue
			}
			line := fmt.Sprintf("  %v/%v", m["namespace"], m["name"])
			if t, ok := m["type"]; ok {
				line += fmt.Sprintf(" (type %v)", t)
			}
			line += fmt.Sprintf("  secret keys: %v", m["keys"])
			if values, ok := m["values"].(map[string]any); ok {
				var kv []string
				for _, k := range slices.Sorted(maps.Keys(values)) {
					kv = append(kv, fmt.Sprintf("%s=%v", k, values[k]))
				}
				line += "  values: " + strings.Join(kv, " ")
			}
			fmt.Fprintln(stdout, line)
		}
	}
}

// costChange prints a stack's monthly cost against the same stack file in
// base (a checkout of the pull request's target branch), as a Markdown
// table for the PR comment. A stack file the base lacks, or that this
// version cannot load, counts as nothing, with a line saying so.
func costChange(args []string, dir string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cost", flag.ContinueOnError)
	stack := fs.String("stack", "", "stack name")
	baseDir := fs.String("base", "", "a checkout of the base branch")
	if err := fs.Parse(args); err != nil {
		return err
	}
	anyPlugin := func(string, string) bool { return true } // plugins are not what this is about
	head := preflight.Stack(dir, *stack, anyPlugin)
	if err := head.Err(); err != nil {
		return err
	}
	var base *plan.Stack
	if *baseDir != "" {
		file := filepath.Join(*baseDir, "Pulumi."+*stack+".yaml")
		if _, err := os.Stat(file); err != nil {
			fmt.Fprintf(stdout, "The base branch has no stack %s: its cost counts as 0.\n\n", *stack)
		} else if r := preflight.Stack(*baseDir, *stack, anyPlugin); r.Err() != nil {
			fmt.Fprintf(stdout, "The base branch's stack %s does not load with this version (%s): its cost counts as 0.\n\n", *stack, firstLine(r.Err()))
		} else {
			base = r.Plan
		}
	}
	fmt.Fprintf(stdout, "Monthly cost of stack %s (docs/sizing.md):\n\n", *stack)
	for _, l := range preflight.CostChange(base, head.Plan) {
		fmt.Fprintln(stdout, l)
	}
	return nil
}

// firstLine is an error's first line, with its first problem when the
// line only announces them.
func firstLine(err error) string {
	lines := strings.Split(err.Error(), "\n")
	if len(lines) > 1 && strings.HasSuffix(lines[0], ":") {
		return lines[0] + " " + strings.TrimSpace(lines[1])
	}
	return lines[0]
}

// listStacks prints the stacks of the project (one per Pulumi.<stack>.yaml)
// as a JSON array: the workflows' matrix, so that a new stack file is
// previewed and deployed without editing them.
func listStacks(dir string, stdout io.Writer) error {
	b, err := json.Marshal(stackfile.Stacks(dir))
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(b))
	return nil
}

// gitopsTarget prints where a stack's render is published, as shell
// variable assignments (GITOPS_REPO, GITOPS_REVISION, GITOPS_PATH,
// GITOPS_RENDER_DIR), all empty for a stack without a gitops block. The
// stack file is validated; its secrets are not needed.
func gitopsTarget(args []string, dir string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gitops", flag.ContinueOnError)
	stack := fs.String("stack", "", "stack name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r := preflight.Stack(dir, *stack, func(string, string) bool { return true })
	if err := r.Err(); err != nil {
		return err
	}
	vars := map[string]string{"GITOPS_REPO": "", "GITOPS_REVISION": "", "GITOPS_PATH": "", "GITOPS_RENDER_DIR": ""}
	if g := r.Plan.GitOps; g != nil {
		vars["GITOPS_REPO"], vars["GITOPS_REVISION"], vars["GITOPS_PATH"], vars["GITOPS_RENDER_DIR"] = g.Spec.RepoURL, g.Spec.TargetRevision, g.Spec.Path, r.Plan.RenderDir
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		fmt.Fprintf(stdout, "%s=%s\n", k, shellQuote(vars[k]))
	}
	return nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
