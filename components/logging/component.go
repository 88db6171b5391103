package logging

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/component"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

// LogCollectorType is the component's type token.
const LogCollectorType = "gpu-node-pools:logging:LogCollector"

// Args configure the log collector.
type Args struct {
	// Spec is the defaulted logging block, with install set.
	Spec  Spec
	Pools []gpupool.Facts
	// Source is the stack's chart source.
	Source   helm.Source
	Workload *kubernetes.Provider
}

// LogCollector is Grafana Alloy on every node of the pools.
type LogCollector struct {
	pulumi.ResourceState

	Namespace pulumi.StringOutput
}

// NewLogCollector registers Alloy's namespace (Pod Security restricted) and
// its release.
func NewLogCollector(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*LogCollector, error) {
	c := &LogCollector{}
	child, err := component.Start(ctx, LogCollectorType, name, c, args != nil && args.Workload != nil, "a workload provider",
		func() pulumi.ProviderResource { return args.Workload }, opts...)
	if err != nil {
		return nil, err
	}
	ns, err := corev1.NewNamespace(ctx, name+"-namespace", podsecurity.Namespace(args.Spec.Namespace, podsecurity.Restricted), child...)
	if err != nil {
		return nil, fmt.Errorf("log collector %s: namespace: %w", name, err)
	}
	r := Release(args.Spec, args.Pools, args.Source)
	if _, err := helm.Install(ctx, name+"-"+r.Name, r, args.Spec.Namespace, args.Source,
		append(child, pulumi.DependsOn([]pulumi.Resource{ns}))...); err != nil {
		return nil, fmt.Errorf("log collector %s: chart: %w", name, err)
	}
	c.Namespace = ns.Metadata.Name().Elem()
	if err := ctx.RegisterResourceOutputs(c, pulumi.Map{"namespace": c.Namespace}); err != nil {
		return nil, fmt.Errorf("log collector %s: outputs: %w", name, err)
	}
	return c, nil
}
