package stacks

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/components/gpupool"
	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/serving"
)

// deployServing registers the models and batch jobs.
func deployServing(ctx *pulumi.Context, cfg *Config, spec platform.Spec, providers *Providers, poolList []gpupool.Pool, after []pulumi.Resource) (*serving.ModelServing, error) {
	pools := map[string]gpupool.Pool{}
	for _, p := range poolList {
		pools[p.Name] = p
	}
	var key pulumi.StringInput
	if cfg.Serving.APIKey != "" {
		key = cfg.Serving.APIKey.Output()
	}
	runtime := ""
	if spec.GPUStack == platform.GPUOperator {
		runtime = "nvidia" // the operator's RuntimeClass; AKS's default runtime has GPUs
	}
	args := &serving.Args{
		Options:              cfg.Serving.Defaults(cfg.Target == catalog.AKS),
		Models:               cfg.Models,
		BatchJobs:            cfg.BatchJobs,
		Pools:                pools,
		APIKey:               key,
		ChartDir:             spec.ChartDir,
		ServiceMonitorLabels: spec.Monitoring.ServiceMonitorLabels,
		RuntimeClass:         runtime,
		Workload:             providers.Workload,
		Rendering:            cfg.RenderDir != "",
		SkipAwait:            spec.SkipAwait,
	}
	if cfg.Storage != nil {
		args.Storage = cfg.Storage.StorageSpec
		args.StorageEnv = cfg.Storage.Env()
	}
	return serving.NewModelServing(ctx, "serving", args, pulumi.DependsOn(after))
}
