// Package stacks is the program: it loads a stack's plan and registers it.
// main.go and the Automation API (stacks/automation) both run Program.
package program

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/plain"
	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/preflight"
	"github.com/natron/gpu-node-pools/stacks/target"
)

// Program is the whole Pulumi program. main.go and the Automation API both
// run exactly this function.
func Program(ctx *pulumi.Context) error { return run(ctx, nil) }

// Resolved is Program with change applied to the decoded config before it
// is planned: the Automation API runs a stack file as it is and makes its
// relative paths absolute, and fills in the chart directory of the machine
// it runs on, here rather than in the stack's config.
func Resolved(change func(*config.Config) *config.Config) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error { return run(ctx, change) }
}

func run(ctx *pulumi.Context, change func(*config.Config) *config.Config) error {
	p, err := plan.LoadWith(rawConfig(ctx), ctx.Stack(), change)
	if err != nil {
		return err // nothing registered yet: a bad config changes nothing
	}
	for _, w := range p.Warnings {
		if err := ctx.Log.Warn(w, nil); err != nil {
			return err
		}
	}
	// A missing plugin would otherwise surface as the engine's "no
	// resource plugin" error after the whole diff, naming no config key.
	if !ctx.RunningWithMocks() {
		if missing := preflight.Plugins(p, preflight.PluginInstalled); len(missing) > 0 {
			return errors.New(strings.Join(missing, "\n"))
		}
	}
	return Deploy(ctx, p)
}

// Deploy registers a plan: the target's providers and pools, the workload
// side on top of them, and the stack outputs.
func Deploy(ctx *pulumi.Context, p *plan.Stack) error {
	if len(p.Identities) > 0 {
		// checked by the plan: only a Federator gets an identity
		if _, err := p.Target.(target.Federator).Federate(ctx, p.Cluster, p.Identities); err != nil {
			return err
		}
	}
	providers, err := p.Target.Providers(ctx, p.Cluster, p.RenderDir)
	if err != nil {
		return err
	}
	for _, pool := range p.Pools {
		if _, err := p.Target.NewPool(ctx, pool, p.Cluster, providers, p.Protect); err != nil {
			return err
		}
	}
	return deployOn(ctx, p, providers)
}

// RenderWorkloadProgram renders only the workload-cluster tree of a
// rendering stack (platform layer, policies, model serving and the GitOps
// objects), with no pool and no cloud identity: for a target whose pools
// are cloud resources those are never in the tree, so the tree is the one
// Program writes. Tooling uses it to check a stack's GitOps delivery
// where the cloud's provider plugin is not installed.
func RenderWorkloadProgram() pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		p, err := plan.Load(rawConfig(ctx), ctx.Stack())
		if err != nil {
			return err
		}
		if p.RenderDir == "" {
			return errors.New("renderDir: required to render the workload tree")
		}
		if p.Target.ManagementCluster() {
			// its pools are objects of the management tree, which the
			// GitOps objects sync too: Program renders them, no cloud needed
			return errors.New("target: its pools render as the management tree; render the whole stack")
		}
		providers, err := p.Target.Providers(ctx, p.Cluster, p.RenderDir)
		if err != nil {
			return err
		}
		return deployOn(ctx, p, providers)
	}
}

// deployOn registers the workload side with the target's providers.
func deployOn(ctx *pulumi.Context, p *plan.Stack, providers *target.Providers) error {
	var err error
	toGitOps := providers.Workload
	if p.GitOps != nil { // validated: only with renderDir
		if toGitOps, err = target.RenderProvider(ctx, target.GitOpsDir, p.RenderDir); err != nil {
			return err
		}
	}
	return deployWorkloads(ctx, p, providers.Workload, toGitOps, p.Target.ManagementCluster(), p.Protect)
}

// WorkloadProgram runs only the workload-cluster side of a stack (platform
// layer, policies, model serving) against the cluster that kubeconfig
// reaches, for pools that exist already: tooling uses it to check an AKS
// stack's Kubernetes objects on a staging or test API server without
// touching Azure. It registers no pool and no cloud resource; the GitOps
// objects, if any, go to the same cluster.
func WorkloadProgram(kubeconfig secret.Secret) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		p, err := plan.Load(rawConfig(ctx), ctx.Stack())
		if err != nil {
			return err
		}
		workload, err := target.KubeconfigProvider(ctx, target.WorkloadDir, kubeconfig)
		if err != nil {
			return err
		}
		return deployWorkloads(ctx, p, workload, workload, p.Target.ManagementCluster(), false)
	}
}

// deployWorkloads registers the stack's parts in the workload cluster, in
// order (the platform layer, the policies, model serving, the add-ons;
// the GitOps objects through toGitOps, management saying whether there is
// a management tree to sync), and exports the outputs; poolsProtected is
// what the protect output reports.
func deployWorkloads(ctx *pulumi.Context, p *plan.Stack, workload, toGitOps *kubernetes.Provider, management, poolsProtected bool) error {
	outputs, err := StackOutputs(p, poolsProtected)
	if err != nil {
		return err
	}
	d := &deployment{p: p, workload: workload, toGitOps: toGitOps, management: management, outputs: outputs}
	for _, part := range p.Parts() {
		register, ok := registrars[part.Key()]
		if !ok {
			return fmt.Errorf("part %s: no registrar", part.Key())
		}
		if err := register(ctx, d, part); err != nil {
			return err
		}
	}
	if len(d.external) > 0 {
		outputs["externalSecrets"] = externalSecrets(p, d.external)
	}
	for _, k := range plain.SortedKeys(outputs) {
		ctx.Export(k, outputs[k])
	}
	return nil
}

// StackOutputs are the stack's outputs: the target, the render directory,
// whether pools are protected, and each pool's facts keyed by name. They
// hold no secret.
func StackOutputs(p *plan.Stack, protect bool) (pulumi.Map, error) {
	byName := pulumi.Map{}
	for _, f := range p.Facts() {
		b, err := json.Marshal(f)
		if err != nil {
			return nil, fmt.Errorf("pool %s facts: %w", f.Name, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("pool %s facts: %w", f.Name, err)
		}
		if c, ok := p.Costs[f.Name]; ok {
			if c.Cost != nil {
				m["cost"] = map[string]any{"hourly": c.Cost.Hourly, "monthlyAtMinNodes": c.Cost.AtMin, "monthlyAtMaxNodes": c.Cost.AtMax,
					"monthlyExpected": c.Cost.Expected, "currency": c.Cost.Currency, "source": c.Cost.Source}
			} else {
				m["costNote"] = c.Note
			}
		}
		byName[f.Name] = plain.Map(m)
	}
	return pulumi.Map{
		"target":    pulumi.String(string(p.Target.Name())),
		"renderDir": pulumi.String(p.RenderDir),
		"protect":   pulumi.Bool(protect),
		"pools":     byName,
		"cost":      plain.Map(CostTotals(p)),
		// what the cluster's own log collector needs on the GPU nodes
		"logCollectorTolerations": tolerations(p.LogTolerations),
	}, nil
}

// CostTotals are the stack's monthly costs by currency (at the pools'
// minNodes, at maxNodes, expected), and the pools without a price.
func CostTotals(p *plan.Stack) map[string]any {
	byCurrency, unpriced := p.CostTotals()
	totals := map[string]any{}
	for cur, t := range byCurrency {
		totals[cur] = map[string]any{"monthlyAtMinNodes": t.AtMin, "monthlyAtMaxNodes": t.AtMax, "monthlyExpected": t.Expected}
	}
	if len(unpriced) > 0 {
		names := make([]any, len(unpriced))
		for i, n := range unpriced {
			names[i] = n
		}
		totals["unpricedPools"] = names
	}
	return totals
}

// rawConfig reads this project's config keys. Keys of the namespace that
// the program does not know are picked up from the engine's full config
// (PULUMI_CONFIG) so that a typo such as gpu-node-pools:pool is an error,
// not silently ignored.
func rawConfig(ctx *pulumi.Context) map[string]string {
	raw := map[string]string{}
	keys := config.Keys()
	for _, k := range keys {
		if v, ok := ctx.GetConfig(config.Key(k)); ok {
			raw[k] = v
		}
	}
	var all map[string]string
	if env := os.Getenv(pulumi.EnvConfig); env != "" && json.Unmarshal([]byte(env), &all) == nil {
		for full, v := range all {
			if short, ok := strings.CutPrefix(full, config.Namespace+":"); ok && !slices.Contains(keys, short) {
				raw[short] = v
			}
		}
	}
	return raw
}

// externalSecrets are the Secrets a render leaves out, as the output
// lists them: namespace, name and the keys each must hold.
func externalSecrets(p *plan.Stack, list []secret.External) pulumi.Array {
	out := pulumi.Array{}
	for _, e := range list {
		keys := make([]any, len(e.Keys))
		for i, k := range e.Keys {
			keys[i] = k
		}
		m := map[string]any{"namespace": e.Namespace, "name": e.Name, "keys": keys}
		if e.Type != "" {
			m["type"] = e.Type
		}
		if len(e.Values) > 0 {
			values := map[string]any{}
			for k, v := range e.Values {
				values[k] = v
			}
			m["values"] = values
		}
		// with gitops.externalSecrets, the render's ExternalSecrets read
		// the Secret from a store entry: where to put it
		if p.GitOps != nil && p.GitOps.Spec.ExternalSecrets != nil {
			es := p.GitOps.Spec.ExternalSecrets
			m["store"] = es.StoreKind + " " + es.Store
			m["storeKey"] = es.StoreKey(e.Namespace, e.Name)
		}
		out = append(out, plain.Map(m))
	}
	return out
}

func tolerations(ts []gpupool.Toleration) pulumi.Array {
	out := pulumi.Array{}
	for _, t := range ts {
		out = append(out, plain.Map(map[string]any{"key": t.Key, "operator": t.Operator, "value": t.Value, "effect": t.Effect}))
	}
	return out
}
