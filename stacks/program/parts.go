package program

import (
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/components/backup"
	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/logging"
	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/plain"
	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// deployment is what the parts are registered with, and what they add to
// as they are.
type deployment struct {
	p                  *plan.Stack
	workload, toGitOps *kubernetes.Provider
	management         bool
	// admitted are what workloads are admitted under (the platform and
	// the policies): model servers, batch jobs and databases wait for them.
	admitted []pulumi.Resource
	outputs  pulumi.Map
	// external are the Secrets a render left out, for the outputs and
	// the GitOps delivery's ExternalSecrets.
	external []secret.External
}

// registrar registers one part.
type registrar func(ctx *pulumi.Context, d *deployment, part plan.Part) error

// registrars register each kind of part, by its key (plan.Part.Key).
var registrars = map[string]registrar{
	"platform": registerPlatform, "policies": registerPolicies, "logging": registerLogging,
	"serving": registerServing, "vectorDBs": registerVectorDBs, "backup": registerBackup, "gitops": registerGitOps,
}

func registerPlatform(ctx *pulumi.Context, d *deployment, part plan.Part) error {
	t := part.(plan.PlatformPart)
	gpu, err := platform.NewGPUPlatform(ctx, "gpu", &platform.Args{Spec: t.Spec, Pools: d.p.Facts(), Source: d.p.Charts, Workload: d.workload})
	d.admitted = append(d.admitted, gpu)
	return err
}

func registerPolicies(ctx *pulumi.Context, d *deployment, part plan.Part) error {
	pol, err := policy.NewGPUPolicies(ctx, "policies", &policy.Args{Policies: part.(plan.PoliciesPart).Resolved, Workload: d.workload})
	d.admitted = append(d.admitted, pol)
	return err
}

func registerLogging(ctx *pulumi.Context, d *deployment, part plan.Part) error {
	_, err := logging.NewLogCollector(ctx, "logging", &logging.Args{Spec: part.(plan.LoggingPart).Spec, Pools: d.p.Facts(),
		Source: d.p.Charts, Workload: d.workload})
	return err
}

// registerServing registers model serving, and adds its endpoints and API
// key to the outputs.
func registerServing(ctx *pulumi.Context, d *deployment, part plan.Part) error {
	ms, err := serving.NewModelServing(ctx, "serving", &serving.Args{Plan: *part.(plan.ServingPart).Resolved, Workload: d.workload},
		pulumi.DependsOn(d.admitted))
	if err != nil {
		return err
	}
	endpoints := pulumi.Map{}
	for name, ep := range ms.Endpoints {
		endpoints[name] = plain.Map(map[string]any{"pool": ep.Pool, "internal": ep.Internal, "public": ep.Public,
			"model": ep.Model, "sizing": ep.Sizing})
	}
	d.outputs["models"] = endpoints
	if ms.SharedKey {
		d.outputs["apiKey"] = ms.APIKey // a secret
	}
	if len(ms.ModelKeys) > 0 {
		d.outputs["modelKeys"] = pulumi.ToSecret(pulumi.ToStringMapOutput(ms.ModelKeys)) // the models' own keys
	}
	d.external = append(d.external, ms.ExternalSecrets...)
	return nil
}

// registerVectorDBs registers the vector databases, and adds their
// endpoints and credentials to the outputs.
func registerVectorDBs(ctx *pulumi.Context, d *deployment, part plan.Part) error {
	t := part.(plan.VectorDBsPart)
	v, err := vectordb.NewVectorDBs(ctx, "vectordb", &vectordb.Args{Specs: t.Specs, InstallOperator: t.InstallOperator,
		OperatorNamespace: t.OperatorNamespace, ServingNamespace: t.ServingNamespace, PrometheusNamespace: t.PrometheusNamespace, Store: t.Store,
		MonitorLabels: t.MonitorLabels, RuleLabels: t.RuleLabels, Source: d.p.Charts, Workload: d.workload}, pulumi.DependsOn(d.admitted))
	if err != nil {
		return err
	}
	dbs := pulumi.Map{}
	for n, e := range v.Endpoints {
		dbs[n] = plain.Map(map[string]any{"kind": e.Kind, "namespace": e.Namespace, "endpoint": e.Address, "credentialsSecret": e.CredentialsSecret})
	}
	d.outputs["vectorDBs"] = dbs
	d.outputs["vectorDBCredentials"] = v.Credentials // secrets
	d.external = append(d.external, v.ExternalSecrets...)
	return nil
}

func registerBackup(ctx *pulumi.Context, d *deployment, part plan.Part) error {
	t := part.(plan.BackupPart)
	b, err := backup.NewBackups(ctx, "backup", &backup.Args{Spec: t.Spec, Namespaces: t.Covered, SkipClasses: t.Skipped, Identity: t.Identity,
		Source: d.p.Charts, Workload: d.workload})
	if err != nil {
		return err
	}
	d.outputs["backupSchedule"] = b.Schedule
	d.external = append(d.external, b.ExternalSecrets...)
	return nil
}

// registerGitOps registers the GitOps tool's objects, last: they sync
// every part before, and its ExternalSecrets stand for the Secrets the
// render left out.
func registerGitOps(ctx *pulumi.Context, d *deployment, part plan.Part) error {
	t := part.(plan.GitOpsPart)
	g, err := gitops.NewDelivery(ctx, "gitops", &gitops.Args{Spec: t.Spec, Prefix: t.Prefix, Management: d.management,
		ExternalSecrets: d.external, GitOps: d.toGitOps, Workload: d.workload})
	if err != nil {
		return err
	}
	d.outputs["gitops"] = pulumi.ToStringArray(g.Objects)
	return nil
}
