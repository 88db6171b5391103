package gpupool

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/components/plain"
)

// BareMetalPoolType is the component's type token.
const BareMetalPoolType = "gpu-node-pools:pools:BareMetalPool"

// BareMetalPoolArgs configures one GPU pool on a bare-metal site.
type BareMetalPoolArgs struct {
	Cluster BareMetalCluster
	Spec    Spec
	// Protect keeps pulumi from deleting the MachineDeployment (and with it
	// the machines). Templates stay unprotected: they are rotated by name.
	Protect bool
	// Management is the provider for the Cluster API management cluster.
	Management *kubernetes.Provider
}

// BareMetalPool is a GPU MachineDeployment with its templates and facts.
type BareMetalPool struct {
	pulumi.ResourceState

	// Pool is what workloads need to land on this pool.
	Pool Pool
	// MachineDeploymentName is the name in the management cluster.
	MachineDeploymentName pulumi.StringOutput
}

// NewBareMetalPool registers a pool's Cluster API objects in the management
// cluster. The spec must be validated.
func NewBareMetalPool(ctx *pulumi.Context, name string, args *BareMetalPoolArgs, opts ...pulumi.ResourceOption) (*BareMetalPool, error) {
	if args == nil || args.Management == nil {
		return nil, fmt.Errorf("bare-metal pool %s: args with a management provider are required", name)
	}
	sku, ok := catalog.Lookup(catalog.Natron, args.Spec.SKU)
	if !ok {
		return nil, fmt.Errorf("bare-metal pool %s: unknown hardware profile %q", name, args.Spec.SKU)
	}
	p := &BareMetalPool{Pool: NewFacts(args.Spec, sku)}
	if err := ctx.RegisterComponentResource(BareMetalPoolType, name, p, opts...); err != nil {
		return nil, fmt.Errorf("bare-metal pool %s: %w", name, err)
	}
	objs := BareMetalObjects(args.Cluster, args.Spec, sku)
	child := []pulumi.ResourceOption{pulumi.Parent(p), pulumi.Provider(args.Management)}

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
