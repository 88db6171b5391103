// Package precheck checks a stack before the engine runs it: its config as
// the program reads it, the secrets and provider plugins it needs, and
// secret values left in plain text. make preview runs it (cmd/stackctl
// check) before it selects or creates the stack, so that an invalid stack
// is never created and the first thing printed is what to fix.
package preflight

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/stackfile"
)

// RandomVersion is the random provider plugin the generated API key needs
// (the SDK version in go.mod).
const RandomVersion = "4.18.4"

// Report is what a check found.
type Report struct {
	// Plan is the stack's plan, nil when its config has problems.
	Plan *plan.Stack
	// Errors stop the stack: config problems, missing secrets or plugins.
	Errors []string
	// Warnings do not: secret values in plain text, a model's KV cache
	// estimated.
	Warnings []string
}

// Err is the report's errors as one error, nil without any.
func (r Report) Err() error {
	if len(r.Errors) == 0 {
		return nil
	}
	return errors.New(strings.Join(r.Errors, "\n"))
}

// Installed reports whether the engine finds a resource provider plugin:
// on the PATH (pulumi-resource-<name>), or installed under PULUMI_HOME
// (default ~/.pulumi) at the version, any version when version is "".
type Installed func(name, version string) bool

// PluginInstalled looks where the engine looks.
func PluginInstalled(name, version string) bool {
	if _, err := exec.LookPath("pulumi-resource-" + name); err == nil && os.Getenv("PULUMI_IGNORE_AMBIENT_PLUGINS") == "" {
		return true
	}
	home := os.Getenv("PULUMI_HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return false
		}
		home = filepath.Join(h, ".pulumi")
	}
	v := "v" + version
	if version == "" {
		v = "v*"
	}
	m, _ := filepath.Glob(filepath.Join(home, "plugins", "resource-"+name+"-"+v))
	return len(m) > 0
}

// Check is Stack before the engine creates or opens the stack: with its
// secrets' passphrase (Passphrase, env reading the environment) in the
// same round.
func Check(projectDir, stack string, installed Installed, env func(string) string) Report {
	f, err := stackfile.Read(projectDir, stack, "secret")
	if err != nil {
		return Report{Errors: []string{err.Error()}}
	}
	r := check(f, installed)
	r.Errors = append(Passphrase(f, env), r.Errors...)
	return r
}

// Stack checks stack's file in projectDir.
func Stack(projectDir, stack string, installed Installed) Report {
	f, err := stackfile.Read(projectDir, stack, "secret")
	if err != nil {
		return Report{Errors: []string{err.Error()}}
	}
	return check(f, installed)
}

// check checks a stack file as read.
func check(f *stackfile.File, installed Installed) Report {
	stack := f.Stack
	var r Report
	r.Warnings = plaintextSecrets(f)
	p, err := plan.Load(stackfile.Unqualified(f.Raw), stack)
	var ce *plan.ConfigError
	switch {
	case errors.As(err, &ce):
		// the plugins too, from what decodes, so that one run says all
		r.Errors = append(r.Errors, ce.Error())
		cfg, _, _ := config.Decode(stackfile.Unqualified(f.Raw))
		if n, ok := plan.NeedsOf(cfg); ok {
			r.Errors = append(r.Errors, plugins(n, installed)...)
		}
		return r
	case err != nil:
		r.Errors = append(r.Errors, err.Error())
		return r
	}
	r.Plan = p
	r.Warnings = append(r.Warnings, p.Warnings...)
	r.Errors = append(r.Errors, Plugins(p, installed)...)
	return r
}

// Plugins are the problems of a plan whose provider plugins the engine
// would not find, each with what to do: the random provider generates the
// API key when serving.apiKey is not set; a target may need its own (AKS
// pools need azure-native).
func Plugins(p *plan.Stack, installed Installed) []string {
	return plugins(p.Needs, installed)
}

func plugins(n plan.Needs, installed Installed) []string {
	var out []string
	if !installed("random", "") {
		for _, key := range n.Generated {
			out = append(out, fmt.Sprintf("%s: not set and the random provider plugin is not installed; set it with "+
				"pulumi config set --secret --path %s \"$(openssl rand -hex 24)\", or install the plugin: pulumi plugin install resource random %s",
				key, key, RandomVersion))
		}
	}
	for _, pl := range n.Plugins {
		if !installed(pl.Name, pl.Version) {
			out = append(out, fmt.Sprintf("%s: %s needs the %s provider plugin %s; "+
				"on a machine with internet access: pulumi plugin install resource %s %s",
				config.Key("target"), n.Target.Name(), pl.Name, pl.Version, pl.Name, pl.Version))
		}
	}
	return out
}

// plaintextSecrets names the secret keys the file gives in plain text.
func plaintextSecrets(f *stackfile.File) []string {
	var out []string
	for _, path := range config.SecretKeys() {
		block, rest, _ := strings.Cut(path, ".")
		raw, ok := f.Raw[block]
		if !ok || slices.Contains(f.Secure, path) {
			continue
		}
		var v any
		if json.Unmarshal([]byte(raw), &v) != nil {
			continue
		}
		for _, k := range strings.Split(rest, ".") {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		if s, _ := v.(string); s != "" {
			out = append(out, fmt.Sprintf("%s is in plain text in %s: anyone who reads the file reads it; "+
				"store it as a secret with pulumi config set --secret --path %s <value>", path, filepath.Base(stackfile.Path("", f.Stack)), path))
		}
	}
	return out
}

// Summary is what a stack deploys, in a few lines for a console or a pull
// request: pools, charts with their versions, models, batch jobs.
func Summary(p *plan.Stack) []string {
	var out []string
	for _, pool := range p.Pools {
		f := pool.Facts
		line := fmt.Sprintf("pool %s: %s, %d × %s per node, %d-%d nodes", f.Name, f.SKU, f.GPUResourcesPerNode, f.GPUResource, f.MinNodes, f.MaxNodes)
		if c := p.Costs[f.Name]; c.Cost != nil {
			line += fmt.Sprintf(", %.0f %s a month at maxNodes, %.0f expected", c.Cost.AtMax, c.Cost.Currency, c.Cost.Expected)
		} else if c.Note != "" {
			line += ", " + strings.SplitN(c.Note, ":", 2)[0] // which figure is missing, in words
		}
		out = append(out, line)
	}
	charts := p.Platform.Installed()
	if p.Serving != nil {
		charts = append(charts, p.Serving.Charts()...)
	}
	var names []string
	for _, c := range charts {
		names = append(names, c.Name+" "+c.Version)
	}
	if len(names) > 0 {
		out = append(out, "charts: "+strings.Join(names, ", "))
	}
	if p.Serving == nil {
		return out
	}
	for _, e := range p.Serving.Engines {
		mem := fit.Sizing(e.Model, e.Pool, e.TensorParallel)
		tp := fmt.Sprint(e.TensorParallel)
		if why := fit.ChosenTensorParallel(e.Model, e.Pool); why != "" {
			tp += " (" + why + ")"
		}
		out = append(out, fmt.Sprintf("model %s on %s: tensor parallel %s, maxModelLen %d, KV cache %d tokens (%.1f × maxModelLen), %d-%d replicas",
			e.Name, e.Pool.Name, tp, e.MaxModelLen, mem.KVTokens(), mem.MaxConcurrency(e.MaxModelLen), e.MinReplicas, e.MaxReplicas))
	}
	for _, o := range p.Serving.Ollamas {
		out = append(out, o.String())
	}
	for _, j := range p.Serving.Jobs {
		out = append(out, fmt.Sprintf("batch job %s on %s: %d GPUs, %q", j.Name, j.Pool.Name, j.GPUs, j.Schedule))
	}
	return out
}
