package vectordb

import (
	"fmt"
	"slices"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	helmv4 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/helm/v4"
	"github.com/pulumi/pulumi-random/sdk/v4/go/random"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/plain"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
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
	Store     *Store
	ChartDir  string
	SkipAwait bool
	// Rendering leaves Secrets with secret values out of the files; they
	// are named in ExternalSecrets.
	Rendering bool
	Workload  *kubernetes.Provider
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
	if args == nil || args.Workload == nil || len(args.Specs) == 0 {
		return nil, fmt.Errorf("vector databases %s: args with databases and a workload provider are required", name)
	}
	v := &VectorDBs{Endpoints: map[string]Endpoint{}}
	if err := ctx.RegisterComponentResource(VectorDBsType, name, v, opts...); err != nil {
		return nil, fmt.Errorf("vector databases %s: %w", name, err)
	}
	fail := func(what string, err error) (*VectorDBs, error) {
		return nil, fmt.Errorf("vector databases %s: %s: %w", name, what, err)
	}
	child := []pulumi.ResourceOption{pulumi.Parent(v), pulumi.Provider(args.Workload)}
	namespaces := map[string]pulumi.Resource{}
	for _, ns := range Namespaces(args.Specs) {
		res, err := corev1.NewNamespace(ctx, name+"-"+ns, podsecurity.Namespace(ns, podsecurity.Restricted), child...)
		if err != nil {
			return fail("namespace "+ns, err)
		}
		namespaces[ns] = res
	}
	var operator []pulumi.Resource
	if args.InstallOperator && slices.ContainsFunc(args.Specs, func(s Spec) bool { return s.Kind == PGVector }) {
		ns, err := corev1.NewNamespace(ctx, name+"-operator-namespace", podsecurity.Namespace(args.OperatorNamespace, podsecurity.Restricted), child...)
		if err != nil {
			return fail("operator namespace", err)
		}
		r := OperatorRelease(args.ChartDir)
		chart, err := helmv4.NewChart(ctx, name+"-"+r.Name, r.Args(args.OperatorNamespace, args.SkipAwait), append(child, pulumi.DependsOn([]pulumi.Resource{ns}))...)
		if err != nil {
			return fail("operator chart", err)
		}
		operator = append(operator, chart) // its CRDs before the Clusters
	}
	credentials := pulumi.StringMap{}
	for _, s := range args.Specs {
		inNS := append(child, pulumi.DependsOn(append([]pulumi.Resource{namespaces[s.Namespace]}, operator...)))
		value, err := credential(ctx, name+"-"+s.Name, s, v)
		if err != nil {
			return fail(s.Name+" credentials", err)
		}
		credentials[s.Name] = value
		data := pulumi.StringMap{APIKeyKey: value}
		if s.Kind == PGVector {
			data = pulumi.StringMap{UsernameKey: pulumi.String(Owner), PasswordKey: value}
		}
		var secretDeps []pulumi.Resource
		for _, ns := range append([]string{s.Namespace, args.ServingNamespace}, s.Clients...) {
			sec, ext, err := secret.Place(ctx, name+"-"+s.Name+"-credentials-"+ns, ns, CredentialsSecret(s.Name), secretType(s), data, args.Rendering, inNS...)
			if err != nil {
				return fail(s.Name+" credentials in "+ns, err)
			}
			if ext != nil {
				v.ExternalSecrets = append(v.ExternalSecrets, *ext)
			} else if ns == s.Namespace {
				secretDeps = append(secretDeps, sec)
			}
		}
		after := append(child, pulumi.DependsOn(append(append([]pulumi.Resource{namespaces[s.Namespace]}, operator...), secretDeps...)))
		if s.Kind == Qdrant {
			r := helm.Release{Name: QdrantRelease(s.Name), Chart: QdrantChart, Dir: args.ChartDir, Values: QdrantValues(s)}
			if _, err := helmv4.NewChart(ctx, name+"-"+r.Name, r.Args(s.Namespace, args.SkipAwait), after...); err != nil {
				return fail(s.Name+" chart", err)
			}
		} else {
			var store *Store
			if s.Backup != "" && args.Store != nil {
				st := *args.Store
				st.Destination = s.Backup
				store = &st
				if st.Endpoint != "" {
					_, ext, err := secret.Place(ctx, name+"-"+s.Name+"-backup-store", s.Namespace, BackupSecret(s.Name), "",
						pulumi.StringMap{AccessKeyKey: st.AccessKey.Output(), SecretKeyKey: st.SecretKey.Output()}, args.Rendering, inNS...)
					if err != nil {
						return fail(s.Name+" backup store keys", err)
					}
					if ext != nil {
						v.ExternalSecrets = append(v.ExternalSecrets, *ext)
					}
				}
			}
			cluster, err := plain.Object(ctx, name+"-"+s.Name, Cluster(s, store), after...)
			if err != nil {
				return fail(s.Name+" cluster", err)
			}
			if store != nil {
				if _, err := plain.Object(ctx, name+"-"+s.Name+"-nightly", ScheduledBackup(s), append(child, pulumi.DependsOn([]pulumi.Resource{cluster}))...); err != nil {
					return fail(s.Name+" scheduled backup", err)
				}
			}
		}
		if _, err := plain.Object(ctx, name+"-"+s.Name+"-metrics", Monitor(s, args.MonitorLabels), inNS...); err != nil {
			return fail(s.Name+" monitor", err)
		}
		if _, err := plain.Object(ctx, name+"-"+s.Name+"-alerts", PrometheusRule(s, args.RuleLabels), inNS...); err != nil {
			return fail(s.Name+" alerts", err)
		}
		if _, err := plain.Object(ctx, name+"-"+s.Name+"-network-policy", NetworkPolicy(s, args.ServingNamespace, args.PrometheusNamespace, args.OperatorNamespace), inNS...); err != nil {
			return fail(s.Name+" network policy", err)
		}
		v.Endpoints[s.Name] = Endpoint{Kind: s.Kind, Namespace: s.Namespace, Address: s.Endpoint(), CredentialsSecret: CredentialsSecret(s.Name)}
	}
	v.Credentials = pulumi.ToSecret(credentials).(pulumi.StringMapOutput)
	if err := ctx.RegisterResourceOutputs(v, pulumi.Map{"credentials": v.Credentials}); err != nil {
		return fail("outputs", err)
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
func OperatorRelease(chartDir string) helm.Release {
	return helm.Release{Name: "cnpg", Chart: OperatorChart, Dir: chartDir, Values: map[string]any{
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "100m", "memory": "200Mi"},
			"limits":   map[string]any{"memory": "512Mi"},
		},
		"affinity": map[string]any{"nodeAffinity": CPUOnly()},
	}}
}
