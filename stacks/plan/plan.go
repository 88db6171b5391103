// Package plan turns a stack's config into its one resolved plan: the
// target, every default, each pool's node shape and facts, each model's
// engine and each batch job, the policies and the stack's own images, each
// decided here once. The program, the Automation API and every component
// read the plan and decide none of it again.
package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/pricing"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/target"
	"github.com/natron/gpu-node-pools/stacks/target/registry"
)

// ChartDirEnv is read when platform.chartDir is not set: a local directory
// of chart archives for offline rendering (tests, these build machines).
const ChartDirEnv = "GPU_NODE_POOLS_CHART_DIR"

// Stack is a stack as it will be built.
type Stack struct {
	// Target is where the GPU nodes come from, and Cluster its config block.
	Target  target.Target
	Cluster target.Cluster
	// RenderDir, when set, makes the providers write YAML instead.
	RenderDir string
	// Protect keeps pulumi from deleting the pools.
	Protect bool
	// Pools are the pools in config order, with node shapes and facts.
	Pools []gpupool.Resolved
	// Platform is the defaulted platform layer.
	Platform platform.Spec
	// Charts is where every chart of the stack comes from and how it is
	// applied: platform.chartDir (else ChartDirEnv), platform.skipAwait,
	// and whether the stack renders.
	Charts helm.Source
	// Serving is model serving and batch work; nil without either.
	Serving *serving.Resolved
	// ServingOptions are the defaulted serving block, with or without
	// models (the vector databases read it too).
	ServingOptions serving.Options
	// Policies are the resolved policies; nil when switched off.
	Policies *policy.Resolved
	// Images are the images the stack runs itself.
	Images []policy.Image
	// Needs are the provider plugins the engine must find besides the
	// Kubernetes provider.
	Needs Needs
	// Identities are the service accounts to federate with cloud
	// identities: the weight download's, each backed-up pgvector
	// database's (CloudNativePG runs a cluster's pods under a service
	// account named after it), Velero's server's.
	Identities []target.Identity
	// Warnings are what the program logs: config that loads but is not
	// exact (a model's KV cache estimated), naming the keys to add.
	Warnings []string
	// Costs are each pool's monthly cost, by pool name; a pool without a
	// price on record has a nil Cost and the reason.
	Costs map[string]Cost
	// LogTolerations are what a log collector needs to run on every node
	// of the pools (the program's or the cluster's own).
	LogTolerations []gpupool.Toleration
	// The add-ons, each nil when the stack has none: the log collector
	// the stack installs, the vector databases, the backups and the
	// GitOps delivery (Parts lists them with the rest).
	Logging   *LoggingPart
	VectorDBs *VectorDBsPart
	Backup    *BackupPart
	GitOps    *GitOpsPart
}

// Cost is one pool's monthly cost, or why there is none.
type Cost struct {
	Cost *pricing.PoolCost
	Note string
}

// Facts are the pools' facts in config order.
func (p *Stack) Facts() []gpupool.Facts {
	out := make([]gpupool.Facts, len(p.Pools))
	for i, r := range p.Pools {
		out[i] = r.Facts
	}
	return out
}

// Load decodes raw stack config (keys without their namespace, values as
// Pulumi hands them to programs) and resolves it for the stack. Every
// problem comes back at once in a *ConfigError.
func Load(raw map[string]string, stack string) (*Stack, error) {
	return LoadWith(raw, stack, nil)
}

// LoadWith is Load with change applied to the decoded config before it is
// resolved (nil: none): the Automation API's paths made absolute and the
// chart directory of the machine it runs on, checked with the rest.
func LoadWith(raw map[string]string, stack string, change func(*config.Config) *config.Config) (*Stack, error) {
	cfg, warnings, decoded := config.Decode(raw)
	if change != nil {
		cfg = change(cfg)
	}
	s, err := resolve(cfg, stack, decoded)
	if s != nil {
		s.Warnings = append(warnings, s.Warnings...)
	}
	return s, err
}

// Resolve validates a typed config (as the Automation API builds it) and
// resolves it for the stack.
func Resolve(cfg *config.Config, stack string) (*Stack, error) {
	if cfg == nil {
		cfg = &config.Config{}
	}
	return resolve(cfg, stack, nil)
}

// Needs are the provider plugins a stack needs besides the Kubernetes
// provider: the random provider for each credential it generates
// (Generated, the config keys left unset), and the target's own (Plugins).
type Needs struct {
	Target    target.Target
	Generated []string
	Plugins   []target.Plugin
}

// NeedsOf is what a config needs from the engine's plugins, from what
// decodes even when the config does not resolve (a preflight reports it
// beside the config's problems); false when the target is unknown.
func NeedsOf(cfg *config.Config) (Needs, bool) {
	t, ok := registry.Lookup(cfg.Target)
	if !ok {
		return Needs{}, false
	}
	return needsOf(cfg, t), true
}

// needsOf decides it once, for NeedsOf and the resolved plan.
func needsOf(cfg *config.Config, t target.Target) Needs {
	n := Needs{Target: t, Plugins: t.Defaults().Plugins}
	// serving registers its Secrets with models or batch jobs alone; the
	// shared key serves every model without its own
	ownKeys := !slices.ContainsFunc(cfg.Models, func(m serving.ModelSpec) bool { return m.APIKey == "" })
	if (len(cfg.Models) > 0 || len(cfg.BatchJobs) > 0) && cfg.Serving.APIKey == "" && !(ownKeys && len(cfg.BatchJobs) == 0) {
		n.Generated = append(n.Generated, config.Key("serving")+".apiKey")
	}
	for i, v := range cfg.VectorDBs {
		if !v.HasSecrets() {
			n.Generated = append(n.Generated, fmt.Sprintf("%s[%d].%s", config.Key("vectorDBs"), i, v.CredentialKey()))
		}
	}
	return n
}

// protect is on when asked for, else for stacks named prod*.
func protect(cfg *config.Config, stack string) bool {
	if cfg.Protect != nil {
		return *cfg.Protect
	}
	return strings.HasPrefix(stack, "prod")
}

// CostTotals sums the priced pools' monthly costs by currency, and names
// the pools without a price, in pool order.
func (p *Stack) CostTotals() (byCurrency map[string]pricing.Totals, unpriced []string) {
	byCurrency = map[string]pricing.Totals{}
	for _, f := range p.Facts() {
		c := p.Costs[f.Name].Cost
		if c == nil {
			unpriced = append(unpriced, f.Name)
			continue
		}
		t := byCurrency[c.Currency]
		t.AtMin += c.AtMin
		t.AtMax += c.AtMax
		t.Expected += c.Expected
		byCurrency[c.Currency] = t
	}
	return byCurrency, unpriced
}
