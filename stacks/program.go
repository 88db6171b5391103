package stacks

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/components/gpupool"
	"github.com/natron/gpu-node-pools/components/plain"
	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/policy"
)

// Program is the whole Pulumi program. main.go and the Automation API both
// run exactly this function.
func Program(ctx *pulumi.Context) error {
	cfg, err := Load(rawConfig(ctx))
	if err != nil {
		return err // nothing registered yet: a bad config changes nothing
	}
	_, err = Deploy(ctx, cfg)
	return err
}

// Deployment is what Deploy built, for the layers that build on it.
type Deployment struct {
	Providers *Providers
	Pools     []gpupool.Pool
	Platform  *platform.GPUPlatform
	Policies  *policy.GPUPolicies // nil when switched off
}

// Deploy registers the pools of a validated config, the workload side on
// top of them, and the stack outputs.
func Deploy(ctx *pulumi.Context, cfg *Config) (*Deployment, error) {
	protect := cfg.ProtectFor(ctx.Stack())
	providers, err := newProviders(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d := &Deployment{Providers: providers}
	for _, spec := range cfg.Pools {
		var pool gpupool.Pool
		switch cfg.Target {
		case catalog.AKS:
			p, err := gpupool.NewAKSPool(ctx, spec.Name, &gpupool.AKSPoolArgs{
				Cluster: *cfg.AKS, Spec: spec, Protect: protect,
			})
			if err != nil {
				return nil, err
			}
			pool = p.Pool
		case catalog.Natron:
			p, err := gpupool.NewBareMetalPool(ctx, spec.Name, &gpupool.BareMetalPoolArgs{
				Cluster: cfg.Natron.Cluster(), Spec: spec, Protect: protect,
				Management: providers.Management,
			})
			if err != nil {
				return nil, err
			}
			pool = p.Pool
		}
		d.Pools = append(d.Pools, pool)
	}
	outputs, err := StackOutputs(cfg, protect, d.Pools)
	if err != nil {
		return nil, err
	}
	if err := deployWorkloads(ctx, cfg, d, outputs); err != nil {
		return nil, err
	}
	return d, nil
}

// deployWorkloads registers what runs in the workload cluster on top of
// the pools (the platform layer, the policies, model serving) and exports
// the outputs.
func deployWorkloads(ctx *pulumi.Context, cfg *Config, d *Deployment, outputs pulumi.Map) error {
	spec := cfg.Platform.Defaults(cfg.Target == catalog.AKS)
	gpu, err := platform.NewGPUPlatform(ctx, "gpu", &platform.Args{Spec: spec, Pools: d.Pools, Workload: d.Providers.Workload})
	if err != nil {
		return err
	}
	d.Platform = gpu
	after := []pulumi.Resource{gpu}
	if cfg.Policies.On() {
		pol, err := policy.NewGPUPolicies(ctx, "policies", &policy.Args{Policies: cfg.ResolvedPolicies(), Workload: d.Providers.Workload})
		if err != nil {
			return err
		}
		d.Policies = pol
		// Model servers and batch jobs are admitted under the policies.
		after = append(after, pol)
	}
	if len(cfg.Models) > 0 || len(cfg.BatchJobs) > 0 {
		ms, err := deployServing(ctx, cfg, spec, d.Providers, d.Pools, after)
		if err != nil {
			return err
		}
		endpoints := pulumi.Map{}
		for name, ep := range ms.Endpoints {
			endpoints[name] = plain.Map(map[string]any{"pool": ep.Pool, "internal": ep.Internal, "public": ep.Public})
		}
		outputs["models"] = endpoints
		outputs["apiKey"] = ms.APIKey // a secret
		if len(ms.ExternalSecrets) > 0 {
			outputs["externalSecrets"] = pulumi.ToStringArray(ms.ExternalSecrets)
		}
	}
	for _, k := range plain.SortedKeys(outputs) {
		ctx.Export(k, outputs[k])
	}
	return nil
}

// WorkloadProgram runs only the workload-cluster side of a stack (platform
// layer, policies, model serving) against the cluster that kubeconfig
// reaches, for pools that exist already: tooling uses it to check an AKS
// stack's Kubernetes objects on a staging or test API server without
// touching Azure. It registers no pool and no cloud resource.
func WorkloadProgram(kubeconfig Secret) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		cfg, err := Load(rawConfig(ctx))
		if err != nil {
			return err
		}
		workload, err := kubeconfigProvider(ctx, "workload", kubeconfig)
		if err != nil {
			return fmt.Errorf("kubernetes provider: %w", err)
		}
		facts := PoolFacts(cfg)
		d := &Deployment{Providers: &Providers{Workload: workload}}
		for _, spec := range cfg.Pools {
			d.Pools = append(d.Pools, facts[spec.Name])
		}
		outputs, err := StackOutputs(cfg, false, d.Pools)
		if err != nil {
			return err
		}
		return deployWorkloads(ctx, cfg, d, outputs)
	}
}

// StackOutputs are the stack's outputs: the target, the render directory,
// whether pools are protected, and each pool's facts keyed by name. They hold
// no secret.
func StackOutputs(cfg *Config, protect bool, pools []gpupool.Pool) (pulumi.Map, error) {
	byName := pulumi.Map{}
	for _, p := range pools {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("pool %s facts: %w", p.Name, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("pool %s facts: %w", p.Name, err)
		}
		byName[p.Name] = plain.Map(m)
	}
	return pulumi.Map{
		"target":    pulumi.String(string(cfg.Target)),
		"renderDir": pulumi.String(cfg.RenderDir),
		"protect":   pulumi.Bool(protect),
		"pools":     byName,
	}, nil
}

// rawConfig reads this project's config keys. Keys of the namespace that
// the program does not know are picked up from the engine's full config
// (PULUMI_CONFIG) so that a typo such as gpu-node-pools:pool is an error,
// not silently ignored.
func rawConfig(ctx *pulumi.Context) map[string]string {
	raw := map[string]string{}
	for _, k := range configKeys {
		if v, ok := ctx.GetConfig(key(k)); ok {
			raw[k] = v
		}
	}
	var all map[string]string
	if env := os.Getenv(pulumi.EnvConfig); env != "" && json.Unmarshal([]byte(env), &all) == nil {
		for full, v := range all {
			if short, ok := strings.CutPrefix(full, Namespace+":"); ok && !slices.Contains(configKeys, short) {
				raw[short] = v
			}
		}
	}
	return raw
}
