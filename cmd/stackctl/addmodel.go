package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/preflight"
	"github.com/natron/gpu-node-pools/stacks/stackfile"
)

// addModel merges a planner design (gpu-plan --format yaml, from -design
// or stdin) into a stack file, keeping its comments, then lists what the
// stack still needs before make preview, each with the command that sets
// it. A design that conflicts with the file changes nothing.
func addModel(args []string, dir string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("add-model", flag.ContinueOnError)
	stack := fs.String("stack", "", "stack name (the customer)")
	from := fs.String("design", "-", "the design's file (gpu-plan --format yaml), - for stdin")
	pool := fs.String("pool", "", "a name for the design's pool (and its models' pool) when the stack has one of that name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *stack == "" {
		return errors.New("add-model: -stack is required")
	}
	path := stackfile.Path(dir, *stack)
	file, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("add-model: %w (make stack writes it)", err)
	}
	var design []byte
	if *from == "-" {
		design, err = io.ReadAll(stdin)
	} else {
		design, err = os.ReadFile(*from)
	}
	if err != nil {
		return fmt.Errorf("add-model: -design: %w", err)
	}
	if *pool != "" {
		if design, err = renamePool(design, *pool); err != nil {
			return err
		}
	}
	merged, err := stackfile.Merge(file, design)
	if err != nil {
		return fmt.Errorf("add-model: %s: %w", path, err)
	}
	if err := os.WriteFile(path, merged, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Merged the design into %s.\n", path)
	r := preflight.Stack(dir, *stack, preflight.PluginInstalled)
	if len(r.Errors) == 0 {
		fmt.Fprintf(stdout, "Nothing is missing: make preview STACK=%s\n", *stack)
		return nil
	}
	fmt.Fprintf(stdout, "Still to set, then make preview STACK=%s:\n", *stack)
	for _, l := range toSet(r.Errors, *stack) {
		fmt.Fprintln(stdout, "  "+l)
	}
	return nil
}

// index is a list index in a key path (vectorDBs[1].password).
var index = regexp.MustCompile(`\[\d+\]`)

// generated is the value the checker proposes for a key the random
// provider would otherwise generate.
const generated = `"$(openssl rand -hex 24)"`

// problemKey is a config problem's key, as the checker names it.
var problemKey = regexp.MustCompile(`^\s*(` + regexp.QuoteMeta(config.Namespace) + `:[A-Za-z0-9_.\[\]]+): `)

// toSet is each problem the check found, with the command that sets its
// key: a secret key with --secret, <value> to fill in. Problems that are
// not a missing value (a model that does not fit) are listed as they are.
func toSet(problems []string, stack string) []string {
	var out []string
	for _, p := range problems {
		for _, line := range strings.Split(p, "\n") {
			m := problemKey.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			out = append(out, strings.TrimSpace(line))
			value := "<value>"
			switch {
			case strings.Contains(line, generated):
				value = generated // the API key: any long random string
			case !strings.HasSuffix(line, "got nothing") && !strings.HasSuffix(line, `got ""`):
				continue // not a missing value
			}
			key, secret := m[1], ""
			for _, k := range config.KeyPaths() {
				if k.Path != index.ReplaceAllString(key, "[*]") {
					continue
				}
				if k.Secret {
					secret = "--secret "
				}
				if k.Type.Kind() == reflect.Slice { // a list: its first item
					key += "[0]"
				}
			}
			out = append(out, fmt.Sprintf("  pulumi config set %s--path %s %s --stack %s", secret, key, value, stack))
		}
	}
	return out
}

// renamePool names the design's pools (gpu-plan writes one) name, and
// its models' pool with them.
func renamePool(design []byte, name string) ([]byte, error) {
	var frag map[string]any
	if err := yaml.Unmarshal(design, &frag); err != nil {
		return nil, fmt.Errorf("add-model: design: %w", err)
	}
	old := map[string]bool{}
	pools, _ := frag[config.Key("pools")].([]any)
	for _, p := range pools {
		if m, ok := p.(map[string]any); ok {
			old[fmt.Sprint(m["name"])] = true
			m["name"] = name
		}
	}
	models, _ := frag[config.Key("models")].([]any)
	for _, p := range models {
		if m, ok := p.(map[string]any); ok && old[fmt.Sprint(m["pool"])] {
			m["pool"] = name
		}
	}
	return yaml.Marshal(frag)
}
