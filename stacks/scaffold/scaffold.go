// Package scaffold writes a new customer's stack file: commented, for one
// target, with no encryption salt of another stack (the engine adds the
// stack's own when it is created), and says which secrets to set next.
// The target asks its own questions and writes its own lines
// (target.Scaffold).
package scaffold

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/stacks/target"
	"github.com/natron/gpu-node-pools/stacks/target/registry"
)

// Options are the answers a new stack needs.
type Options struct {
	// Name is the stack's name (the customer).
	Name string
	// Target is the target's name (registry.Names).
	Target string
	// Cluster is the cluster the pools join.
	Cluster string
	// RenderDir, when set, renders YAML for GitOps instead of applying.
	RenderDir string
	// Answers are the target's questions' answers, by flag.
	Answers map[string]string
}

var stackName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,99}$`)

// Problems lists what is missing or wrong in the answers, by make
// variable.
func (o Options) Problems() []string {
	var out []string
	if !stackName.MatchString(o.Name) {
		out = append(out, fmt.Sprintf("NAME %q: a stack name is letters, digits, '-', '_' and '.', at most 100", o.Name))
	}
	t, ok := registry.Lookup(o.Target)
	if !ok {
		return append(out, fmt.Sprintf("TARGET %q: %s", o.Target, strings.Join(registry.Names(), " or ")))
	}
	if o.Cluster == "" {
		out = append(out, "CLUSTER: required for target "+o.Target)
	}
	for _, q := range t.Scaffold().Questions {
		if q.Required && o.Answers[q.Flag] == "" {
			out = append(out, q.Var+": required for target "+o.Target)
		}
	}
	return out
}

// answers are the target's answers with its defaults filled in.
func (o Options) answers(t target.Target) target.Answers {
	a := target.Answers{Name: o.Name, Cluster: o.Cluster, RenderDir: o.RenderDir, Values: map[string]string{}}
	for k, v := range o.Answers {
		a.Values[k] = v
	}
	for _, q := range t.Scaffold().Questions {
		if a.Values[q.Flag] == "" && q.Default != nil {
			a.Values[q.Flag] = q.Default(a)
		}
	}
	return a
}

//go:embed stack.yaml.tmpl
var stackTemplate string

var tmpl = template.Must(template.New("stack").Parse(stackTemplate))

// File is the new stack file's text.
func File(o Options) (string, error) {
	t, ok := registry.Lookup(o.Target)
	if !ok {
		return "", fmt.Errorf("target %q: %s", o.Target, strings.Join(registry.Names(), " or "))
	}
	a := o.answers(t)
	block, err := template.New(o.Target).Parse(t.Scaffold().Block)
	if err != nil {
		return "", fmt.Errorf("target %s's stack template: %w", o.Target, err)
	}
	var lines bytes.Buffer
	if err := block.Execute(&lines, a); err != nil {
		return "", fmt.Errorf("target %s's stack template: %w", o.Target, err)
	}
	kind := t.Planning().WeightsStore
	var b bytes.Buffer
	err = tmpl.Execute(&b, map[string]any{"Name": o.Name, "RenderDir": o.RenderDir, "Block": strings.TrimRight(lines.String(), "\n"),
		"StorageKind": kind, "Scheme": serving.Scheme(kind)})
	return b.String(), err
}

// Secrets are the secret keys the new stack needs before it previews.
func Secrets(o Options) []string {
	var out []string
	for _, s := range prompts(o) {
		out = append(out, s.Key)
	}
	return out
}

func prompts(o Options) []target.SecretPrompt {
	t, ok := registry.Lookup(o.Target)
	if !ok {
		return nil
	}
	return t.Scaffold().Secrets(o.answers(t))
}

// NextSteps are the commands to run after the file is written: the
// stack's creation with its own secrets provider, each secret, a preview.
func NextSteps(o Options) []string {
	steps := []string{
		`eval "$(make -s env)"    # the toolchain, backend and PULUMI_HOME that make preview uses`,
		`export PULUMI_CONFIG_PASSPHRASE='<this customer's passphrase>'    # or a KMS secrets provider`,
		"pulumi stack init " + o.Name + " --secrets-provider passphrase",
	}
	for _, s := range prompts(o) {
		steps = append(steps, fmt.Sprintf(`pulumi config set --secret --path %s --stack %s -- "$(cat %s)"`, s.Key, o.Name, s.From))
	}
	return append(steps, "make preview STACK="+o.Name)
}

// Questions are every target's questions, each flag once, for stackctl
// new's flags: the help names the targets that ask it.
func Questions() []target.Question {
	var out []target.Question
	at := map[string]int{}
	for _, t := range registry.All() {
		for _, q := range t.Scaffold().Questions {
			q.Help = string(t.Name()) + ": " + q.Help
			if i, ok := at[q.Flag]; ok {
				out[i].Help += "; " + q.Help
				continue
			}
			at[q.Flag] = len(out)
			out = append(out, q)
		}
	}
	return out
}
