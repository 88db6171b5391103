package gitops

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/component"
	"github.com/natron/gpu-node-pools/internal/plain"
	"github.com/natron/gpu-node-pools/internal/secret"
)

// DeliveryType is the component's type token.
const DeliveryType = "gpu-node-pools:gitops:Delivery"

// Args configure the delivery.
type Args struct {
	// Spec is the defaulted gitops block.
	Spec Spec
	// Prefix starts the tool's object names (one stack's among many in
	// the tool's namespace).
	Prefix string
	// Management is set when the target has a management cluster, whose
	// tree gets its own Application or Kustomizations.
	Management bool
	// ExternalSecrets are the Secrets the render left out; with
	// Spec.ExternalSecrets each gets an ExternalSecret in the workload.
	ExternalSecrets []secret.External
	// GitOps is where the tool's objects go (the render's gitops/ tree);
	// Workload where the ExternalSecrets go.
	GitOps, Workload *kubernetes.Provider
}

// Delivery is a stack's GitOps objects.
type Delivery struct {
	pulumi.ResourceState

	// Objects are the tool's objects (kind/name), known at registration.
	Objects []string
}

// NewDelivery registers the Argo CD Applications, or Flux's GitRepository
// and Kustomizations, and the ExternalSecrets.
func NewDelivery(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*Delivery, error) {
	d := &Delivery{}
	toGitOps, err := component.Start(ctx, DeliveryType, name, d, args != nil && args.GitOps != nil && args.Workload != nil && args.Prefix != "", "a prefix, a gitops and a workload provider",
		func() pulumi.ProviderResource { return args.GitOps }, opts...)
	if err != nil {
		return nil, err
	}
	var objs []map[string]any
	if args.Spec.Tool == Flux {
		objs = append(objs, GitRepository(args.Spec, args.Prefix))
		for _, dest := range args.Spec.Destinations(args.Management) {
			objs = append(objs, Kustomizations(args.Spec, args.Prefix, dest)...)
		}
	} else {
		for _, dest := range args.Spec.Destinations(args.Management) {
			objs = append(objs, Application(args.Spec, args.Prefix, dest))
		}
	}
	for _, o := range objs {
		meta := o["metadata"].(map[string]any)
		n := meta["name"].(string)
		if _, err := plain.Object(ctx, name+"-"+n, o, toGitOps...); err != nil {
			return nil, fmt.Errorf("gitops delivery %s: %s %s: %w", name, o["kind"], n, err)
		}
		d.Objects = append(d.Objects, o["kind"].(string)+"/"+n)
	}
	if e := args.Spec.ExternalSecrets; e != nil {
		toWorkload := []pulumi.ResourceOption{pulumi.Parent(d), pulumi.Provider(args.Workload)}
		for _, ext := range args.ExternalSecrets {
			if _, err := plain.Object(ctx, name+"-"+ext.Namespace+"-"+ext.Name, ExternalSecret(*e, ext), toWorkload...); err != nil {
				return nil, fmt.Errorf("gitops delivery %s: external secret %s/%s: %w", name, ext.Namespace, ext.Name, err)
			}
		}
	}
	if err := ctx.RegisterResourceOutputs(d, pulumi.Map{"objects": pulumi.ToStringArray(d.Objects)}); err != nil {
		return nil, fmt.Errorf("gitops delivery %s: outputs: %w", name, err)
	}
	return d, nil
}
