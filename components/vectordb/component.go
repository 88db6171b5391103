package vectordb

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-random/sdk/v4/go/random"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/component"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/secret"
)

// VectorDBsType is the component's type token.
const VectorDBsType = "gpu-node-pools:vectordb:VectorDBs"

// Args configure the vector databases.
type Args struct {
	// Specs are the defaulted, validated databases.
	Specs []Spec
	// InstallOperator installs CloudNativePG in OperatorNamespace; else
	// the platform's operator runs there.
	InstallOperator   bool
	OperatorNamespace string
	// ServingNamespace and PrometheusNamespace may connect (queries,
	// metrics); MonitorLabels are what Prometheus's monitor selector
	// wants, RuleLabels what its rule selector wants.
	ServingNamespace, PrometheusNamespace string
	MonitorLabels, RuleLabels             map[string]string
	// Store takes pgvector's backups (nil without).
	Store *Store
	// Source is the stack's chart source; rendering, Secrets with secret
	// values are left out of the files (named in ExternalSecrets).
	Source   helm.Source
	Workload *kubernetes.Provider
}

// Endpoint is how a client reaches one database.
type Endpoint struct {
	Kind, Namespace, Address, CredentialsSecret string
}

// VectorDBs are a stack's vector databases.
type VectorDBs struct {
	pulumi.ResourceState

	Endpoints map[string]Endpoint
	// Credentials are each database's password or API key, as secrets.
	Credentials pulumi.StringMapOutput
	// ExternalSecrets are the Secrets a render left out.
	ExternalSecrets []secret.External
}

// NewVectorDBs registers the namespaces (restricted), the operator when
// asked, and per database its credentials (in its namespace, the serving
// namespace and each client's), its CloudNativePG Cluster or Qdrant
// release, its backups, its monitor and alerts, and its NetworkPolicy.
func NewVectorDBs(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*VectorDBs, error) {
	v := &VectorDBs{Endpoints: map[string]Endpoint{}}
	child, err := component.Start(ctx, VectorDBsType, name, v, args != nil && args.Workload != nil && len(args.Specs) > 0, "databases and a workload provider",
		func() pulumi.ProviderResource { return args.Workload }, opts...)
	if err != nil {
		return nil, err
	}
	r := &dbRegistrar{ctx: ctx, name: name, args: args, v: v, namespaces: map[string]pulumi.Resource{}, child: child}
	credentials, err := r.registerAll()
	if err != nil {
		return nil, fmt.Errorf("vector databases %s: %w", name, err)
	}
	v.Credentials = pulumi.ToSecret(credentials).(pulumi.StringMapOutput)
	if err := ctx.RegisterResourceOutputs(v, pulumi.Map{"credentials": v.Credentials}); err != nil {
		return nil, fmt.Errorf("vector databases %s: outputs: %w", name, err)
	}
	return v, nil
}

// credential is the database's password or API key from config, else
// generated (and kept in the state, as a secret).
func credential(ctx *pulumi.Context, name string, s Spec, parent pulumi.Resource) (pulumi.StringOutput, error) {
	if given := s.Password + s.APIKey; given != "" {
		return given.Output(), nil
	}
	pw, err := random.NewRandomPassword(ctx, name+"-credential", &random.RandomPasswordArgs{Length: pulumi.Int(32), Special: pulumi.Bool(false)}, pulumi.Parent(parent))
	if err != nil {
		return pulumi.StringOutput{}, err
	}
	return pulumi.ToSecret(pw.Result).(pulumi.StringOutput), nil
}

func secretType(s Spec) string {
	if s.Kind == PGVector {
		return "kubernetes.io/basic-auth"
	}
	return "Opaque"
}

// OperatorRelease is CloudNativePG's operator chart: restricted, with
// resources, on CPU nodes, its CRDs from the chart.
func OperatorRelease(src helm.Source) helm.Release {
	return src.Release("cnpg", OperatorChart, map[string]any{
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "100m", "memory": "200Mi"},
			"limits":   map[string]any{"memory": "512Mi"},
		},
		"affinity": map[string]any{"nodeAffinity": CPUOnly()},
	})
}
