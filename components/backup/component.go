package backup

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/component"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/plain"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/secret"
)

// BackupsType is the component's type token.
const BackupsType = "gpu-node-pools:backup:Backups"

// Args configure the backups.
type Args struct {
	// Spec is the defaulted backup block, with enabled set.
	Spec Spec
	// Namespaces are the namespaces the program owns, to back up.
	Namespaces []string
	// SkipClasses are the storage classes whose volumes are never backed
	// up (the weight caches').
	SkipClasses []string
	// Identity is the Velero server's workload identity (zero: none).
	Identity kube.WorkloadIdentity
	// Source is the stack's chart source; rendering, the credentials
	// Secret is left out of the files (named in ExternalSecrets instead).
	Source   helm.Source
	Workload *kubernetes.Provider
}

// Backups are the Velero objects of a stack.
type Backups struct {
	pulumi.ResourceState

	Schedule pulumi.StringOutput
	// ExternalSecrets are the Secrets a render left out.
	ExternalSecrets []secret.External
}

// NewBackups registers Velero (with install), the resource policy, the
// storage location and its credentials, and the Schedule.
func NewBackups(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*Backups, error) {
	b := &Backups{}
	child, err := component.Start(ctx, BackupsType, name, b, args != nil && args.Workload != nil, "a workload provider",
		func() pulumi.ProviderResource { return args.Workload }, opts...)
	if err != nil {
		return nil, err
	}
	fail := func(what string, err error) (*Backups, error) {
		return nil, fmt.Errorf("backups %s: %s: %w", name, what, err)
	}
	s := args.Spec
	var deps []pulumi.Resource
	if s.Install {
		ns, err := corev1.NewNamespace(ctx, name+"-namespace", podsecurity.Namespace(s.Namespace, podsecurity.Restricted), child...)
		if err != nil {
			return fail("namespace", err)
		}
		r := Release(s, args.Source, args.Identity)
		chart, err := helm.Install(ctx, name+"-"+r.Name, r, s.Namespace, args.Source, append(child, pulumi.DependsOn([]pulumi.Resource{ns}))...)
		if err != nil {
			return fail("chart", err)
		}
		deps = append(deps, chart) // its CRDs come before the objects below
	}
	after := append(child, pulumi.DependsOn(deps))
	if s.NeedsCredentials() {
		file := pulumi.All(s.Location.AccessKey.Output(), s.Location.SecretKey.Output()).ApplyT(func(v []any) string {
			return Credentials(v[0].(string), v[1].(string))
		}).(pulumi.StringOutput)
		_, ext, err := secret.Place(ctx, name+"-credentials", s.Namespace, CredentialsName, "", pulumi.StringMap{CredentialsKey: file}, args.Source.Rendering, after...)
		if err != nil {
			return fail("credentials", err)
		}
		if ext != nil {
			b.ExternalSecrets = append(b.ExternalSecrets, *ext)
		}
	}
	if loc := StorageLocation(s); loc != nil {
		if _, err := plain.Object(ctx, name+"-location", loc, after...); err != nil {
			return fail("storage location", err)
		}
	}
	if policy := Policy(args.SkipClasses); policy != nil {
		cm, err := corev1.NewConfigMap(ctx, name+"-policy", &corev1.ConfigMapArgs{
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(PolicyName), Namespace: pulumi.String(s.Namespace)},
			Data:     pulumi.ToStringMap(policy),
		}, after...)
		if err != nil {
			return fail("resource policy", err)
		}
		after = append(child, pulumi.DependsOn(append(deps, cm))) // a Backup reads its policy when it starts
	}
	sched, err := plain.Object(ctx, name+"-schedule", Schedule(s, args.Namespaces, args.SkipClasses), after...)
	if err != nil {
		return fail("schedule", err)
	}
	b.Schedule = sched.Metadata.Name().Elem()
	if err := ctx.RegisterResourceOutputs(b, pulumi.Map{"schedule": b.Schedule}); err != nil {
		return fail("outputs", err)
	}
	return b, nil
}
