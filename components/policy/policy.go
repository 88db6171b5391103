package policy

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/component"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/plain"
)

// GPUPoliciesType is the component's type token.
const GPUPoliciesType = kube.Project + ":policy:GPUPolicies"

// Args are the resolved policy settings.
type Args struct {
	Policies Resolved
	// Workload is the cluster the GPU pods run in.
	Workload *kubernetes.Provider
}

// GPUPolicies are the Kyverno ClusterPolicies of a stack.
type GPUPolicies struct {
	pulumi.ResourceState
	// Names of the installed ClusterPolicies.
	Names pulumi.StringArrayOutput `pulumi:"names"`
}

// NewGPUPolicies registers the enabled ClusterPolicies.
func NewGPUPolicies(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*GPUPolicies, error) {
	p := &GPUPolicies{}
	child, err := component.Start(ctx, GPUPoliciesType, name, p, args != nil && args.Workload != nil, "a workload provider",
		func() pulumi.ProviderResource { return args.Workload }, opts...)
	if err != nil {
		return nil, err
	}
	var names pulumi.StringArray
	for _, obj := range ClusterPolicies(args.Policies) {
		n := obj["metadata"].(map[string]any)["name"].(string)
		if _, err := plain.Object(ctx, name+"-"+n, obj, child...); err != nil {
			return nil, fmt.Errorf("cluster policy %s: %w", n, err)
		}
		names = append(names, pulumi.String(n))
	}
	p.Names = names.ToStringArrayOutput()
	if err := ctx.RegisterResourceOutputs(p, pulumi.Map{"names": p.Names}); err != nil {
		return nil, fmt.Errorf("register %s outputs: %w", name, err)
	}
	return p, nil
}
