package gpupool

import (
	"fmt"

	containerservice "github.com/pulumi/pulumi-azure-native-sdk/containerservice/v2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/components/catalog"
)

// AKSPoolType is the component's type token.
const AKSPoolType = "gpu-node-pools:pools:AKSPool"

// AKSPoolArgs configures one GPU agent pool on an existing AKS cluster.
type AKSPoolArgs struct {
	Cluster AKSCluster
	Spec    Spec
	// Protect keeps pulumi from deleting the pool (prod stacks).
	Protect bool
}

// AKSPool is a GPU agent pool with its facts.
type AKSPool struct {
	pulumi.ResourceState

	// Pool is what workloads need to land on this pool.
	Pool Pool
	// AgentPoolID is the Azure resource ID of the agent pool.
	AgentPoolID pulumi.IDOutput
	// ProvisioningState is Azure's view of the pool.
	ProvisioningState pulumi.StringOutput
}

// NewAKSPool registers a GPU agent pool. The spec must be validated.
func NewAKSPool(ctx *pulumi.Context, name string, args *AKSPoolArgs, opts ...pulumi.ResourceOption) (*AKSPool, error) {
	if args == nil {
		return nil, fmt.Errorf("aks pool %s: args are required", name)
	}
	sku, ok := catalog.Lookup(catalog.AKS, args.Spec.SKU)
	if !ok {
		return nil, fmt.Errorf("aks pool %s: unknown AKS VM size %q", name, args.Spec.SKU)
	}
	p := &AKSPool{Pool: NewFacts(args.Spec, sku)}
	if err := ctx.RegisterComponentResource(AKSPoolType, name, p, opts...); err != nil {
		return nil, fmt.Errorf("aks pool %s: %w", name, err)
	}
	ap, err := containerservice.NewAgentPool(ctx, name+"-agentpool",
		AgentPoolArgs(args.Cluster, args.Spec, sku),
		pulumi.Parent(p),
		pulumi.Protect(args.Protect),
		pulumi.IgnoreChanges([]string{"count"}),
		pulumi.ReplaceOnChanges(aksImmutable),
		// Agent pool names are unique per cluster: the old pool must go
		// before a replacement with the same name can be created.
		pulumi.DeleteBeforeReplace(true),
	)
	if err != nil {
		return nil, fmt.Errorf("aks pool %s: agent pool: %w", name, err)
	}
	p.AgentPoolID = ap.ID()
	p.ProvisioningState = ap.ProvisioningState
	if err := ctx.RegisterResourceOutputs(p, pulumi.Map{
		"agentPoolId":       ap.ID(),
		"provisioningState": ap.ProvisioningState,
	}); err != nil {
		return nil, fmt.Errorf("aks pool %s: outputs: %w", name, err)
	}
	return p, nil
}
