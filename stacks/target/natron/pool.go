package natron

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/component"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/plain"
)

// PoolType is the component's type token.
const PoolType = kube.Project + ":pools:BareMetalPool"

// PoolArgs configures one GPU pool on a bare-metal site.
type PoolArgs struct {
	Cluster Cluster
	// Pool is the validated pool with its hardware profile and facts.
	Pool gpupool.Resolved
	// Protect keeps pulumi from deleting the MachineDeployment (and with it
	// the machines). Templates stay unprotected: they are rotated by name.
	Protect bool
	// Management is the provider for the Cluster API management cluster.
	Management *kubernetes.Provider
}

// Pool is a GPU MachineDeployment with its templates.
type Pool struct {
	pulumi.ResourceState

	// MachineDeploymentName is the name in the management cluster.
	MachineDeploymentName pulumi.StringOutput
}

// NewPool registers a pool's Cluster API objects in the management cluster.
func NewPool(ctx *pulumi.Context, name string, args *PoolArgs, opts ...pulumi.ResourceOption) (*Pool, error) {
	p := &Pool{}
	child, err := component.Start(ctx, PoolType, name, p, args != nil && args.Management != nil, "a management provider",
		func() pulumi.ProviderResource { return args.Management }, opts...)
	if err != nil {
		return nil, err
	}
	objs := Objects(args.Cluster, args.Pool)

	kct, err := plain.Object(ctx, name+"-bootstrap", objs.Bootstrap, child...)
	if err != nil {
		return nil, fmt.Errorf("bare-metal pool %s: bootstrap template: %w", name, err)
	}
	m3t, err := plain.Object(ctx, name+"-machines", objs.Infrastructure, child...)
	if err != nil {
		return nil, fmt.Errorf("bare-metal pool %s: machine template: %w", name, err)
	}
	md, err := plain.Object(ctx, name+"-deployment", objs.MachineDeployment,
		append(child,
			pulumi.Protect(args.Protect),
			pulumi.DependsOn([]pulumi.Resource{kct, m3t}),
		)...)
	if err != nil {
		return nil, fmt.Errorf("bare-metal pool %s: machine deployment: %w", name, err)
	}
	p.MachineDeploymentName = md.Metadata.Name().Elem()
	if err := ctx.RegisterResourceOutputs(p, pulumi.Map{
		"machineDeploymentName": p.MachineDeploymentName,
	}); err != nil {
		return nil, fmt.Errorf("bare-metal pool %s: outputs: %w", name, err)
	}
	return p, nil
}
