package aks

import (
	"fmt"

	containerservice "github.com/pulumi/pulumi-azure-native-sdk/containerservice/v2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/component"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/kube"
)

// PoolType is the component's type token.
const PoolType = kube.Project + ":pools:AKSPool"

// PoolArgs configures one GPU agent pool on an existing AKS cluster.
type PoolArgs struct {
	Cluster Cluster
	// Pool is the validated pool with its VM size and facts.
	Pool gpupool.Resolved
	// Protect keeps pulumi from deleting the pool (prod stacks).
	Protect bool
}

// Pool is a GPU agent pool.
type Pool struct {
	pulumi.ResourceState

	// AgentPoolID is the Azure resource ID of the agent pool.
	AgentPoolID pulumi.IDOutput
	// ProvisioningState is Azure's view of the pool.
	ProvisioningState pulumi.StringOutput
}

// NewPool registers a GPU agent pool.
func NewPool(ctx *pulumi.Context, name string, args *PoolArgs, opts ...pulumi.ResourceOption) (*Pool, error) {
	p := &Pool{}
	if _, err := component.Start(ctx, PoolType, name, p, args != nil, "a pool and its cluster", nil, opts...); err != nil {
		return nil, err
	}
	ap, err := containerservice.NewAgentPool(ctx, name+"-agentpool",
		AgentPoolArgs(args.Cluster, args.Pool),
		pulumi.Parent(p),
		pulumi.Protect(args.Protect),
		pulumi.IgnoreChanges([]string{"count"}),
		pulumi.ReplaceOnChanges(immutable),
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
