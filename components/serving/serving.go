package serving

import (
	"fmt"
	"math"
	"slices"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	helmv4 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/helm/v4"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	schedulingv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/scheduling/v1"
	"github.com/pulumi/pulumi-random/sdk/v4/go/random"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/plain"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/secret"
)

// ModelServingType is the component's type token.
const ModelServingType = kube.Project + ":serving:ModelServing"

// Resolved is model serving as the stack's plan decided it: plain data.
type Resolved struct {
	// Options are defaulted; their APIKey, when set, is the models' key
	// (else one is generated).
	Options Options
	// Storage is the weights store (nil without models).
	Storage *Storage
	// Identity is the download Jobs' workload identity (zero: none).
	Identity kube.WorkloadIdentity
	Engines  []Engine
	// Ollamas are the models Ollama serves.
	Ollamas []OllamaServer
	Jobs    []Job
	// ChartDir holds chart archives instead of the Helm repositories.
	ChartDir string
	// SkipAwait applies charts without waiting for their pods.
	SkipAwait bool
	// PodSecurity are the levels the namespaces enforce, by role.
	PodSecurity podsecurity.Spec
	// Rendering is set when the provider writes YAML instead of applying:
	// Secrets with secret values are then not written (they would land in
	// the files in plain text); ExternalSecrets names what to provide.
	Rendering bool
}

// InstallsKEDA is whether the program installs KEDA: for models, unless the
// cluster runs its own. Rendered without a cluster, Helm assumes Kubernetes
// v1.20, which the KEDA chart refuses: GitOps installs bring KEDA through
// their pipeline.
func (p Resolved) InstallsKEDA() bool {
	return p.Options.InstallKEDA != nil && *p.Options.InstallKEDA && len(p.Engines) > 0 && !p.Rendering
}

// InstallsHTTPAddOn is whether KEDA's HTTP add-on comes with it: for
// models that scale from zero.
func (p Resolved) InstallsHTTPAddOn() bool {
	return p.InstallsKEDA() && slices.ContainsFunc(p.Engines, Engine.ScalesFromZero)
}

// Namespace is a namespace model serving creates.
type Namespace struct {
	Role, Name string
	// Level is the Pod Security level it enforces.
	Level string
	// Suffix names its resource after the component's.
	Suffix string
}

// Namespaces are the namespaces model serving creates: the models', the
// batch jobs' and KEDA's when the program installs it.
func (p Resolved) Namespaces() []Namespace {
	o := p.Options
	out := []Namespace{{Role: podsecurity.Serving, Name: o.Namespace, Suffix: "-namespace"}}
	if len(p.Jobs) > 0 {
		out = append(out, Namespace{Role: podsecurity.Batch, Name: o.BatchNamespace, Suffix: "-batch-namespace"})
	}
	if p.InstallsKEDA() {
		out = append(out, Namespace{Role: podsecurity.KEDA, Name: KEDANamespace, Suffix: "-keda-namespace"})
	}
	for i := range out {
		out[i].Level = p.PodSecurity.Level(out[i].Role)
	}
	return out
}

// Charts are the charts model serving installs.
func (p Resolved) Charts() []helm.Chart {
	var out []helm.Chart
	if len(p.Engines) > 0 {
		out = append(out, p.Options.Charts.VLLMStack)
	}
	if len(p.Ollamas) > 0 {
		out = append(out, p.Options.Charts.Ollama)
	}
	if p.InstallsKEDA() {
		out = append(out, p.Options.Charts.KEDA)
	}
	if p.InstallsHTTPAddOn() {
		out = append(out, p.Options.Charts.HTTPAddOn)
	}
	return out
}

// Args configures model serving and batch work.
type Args struct {
	Plan     Resolved
	Workload *kubernetes.Provider
}

// ModelServing is the models, their caches and scaling, and batch jobs.
type ModelServing struct {
	pulumi.ResourceState

	// APIKey is the key every model expects, a secret.
	APIKey pulumi.StringOutput
	// Endpoints are the in-cluster and public endpoints by model.
	Endpoints map[string]ModelEndpoint
	// ExternalSecrets are the Secrets to create with the cluster's secret
	// manager when rendering (their names, in the serving namespace).
	ExternalSecrets []secret.External
}

// ModelEndpoint is where a model answers, the id clients ask for, and
// how it is served.
type ModelEndpoint struct {
	Pool     string `json:"pool"`
	Internal string `json:"internal"`
	Public   string `json:"public,omitempty"`
	// Model is the id of the OpenAI API's "model" field (the served name).
	Model string `json:"model"`
	// Sizing are the values the model runs with, defaults included.
	Sizing map[string]any `json:"sizing"`
}

// Sizing is what the stack outputs about how a model is served: the
// values decided, defaults included, and the KV cache they leave.
func (e Engine) Sizing() map[string]any {
	mem := fit.Sizing(e.Model, e.Pool, e.TensorParallel)
	out := map[string]any{
		"tensorParallel": e.TensorParallel, "maxModelLen": e.MaxModelLen, "gpuMemoryUtilization": e.GPUMemoryUtilization,
		"minReplicas": e.MinReplicas, "maxReplicas": e.MaxReplicas, "queueDepthTarget": e.QueueDepthTarget,
		"dtype": e.Dtype, "kvCacheTokens": mem.KVTokens(),
		"maxConcurrency": math.Floor(mem.MaxConcurrency(e.MaxModelLen)*100) / 100,
	}
	if e.Quantization != "" {
		out["quantization"] = e.Quantization
	}
	if e.Estimated() {
		out["kvCacheEstimated"] = true
	}
	return out
}

// NewEngine is how the program serves a validated model on its pool with
// defaulted options: the values every release and ScaledObject come from.
func NewEngine(m ModelSpec, pool gpupool.Facts, o Options, serviceMonitorLabels map[string]string, runtimeClass string) Engine {
	return Engine{
		Model: m.Model(), Source: m.Source, Hostname: m.Hostname, Pool: pool, MinReplicas: m.Replicas(),
		QueueDepthTarget: m.QueueDepthTarget, Image: o.Image,
		APIKeySecret: APIKeySecret, WeightsClaim: WeightsClaim(m.Name), BandwidthMBps: o.BandwidthMBps,
		PrometheusAddress: o.PrometheusAddress, ServiceMonitorLabels: serviceMonitorLabels,
		RuntimeClass: runtimeClass, PriorityClass: ServingPriority,
	}
}

// wakeService is a scaled-to-zero model's in-cluster name: it resolves to
// the interceptor (in KEDA's namespace), which an Ingress in the model's
// namespace can then name as its backend.
func wakeService(ns string, e Engine) *corev1.ServiceArgs {
	return &corev1.ServiceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(RouteName(e.Name)), Namespace: pulumi.String(ns),
			Labels: pulumi.StringMap{"gpu-node-pools/model": pulumi.String(e.Name)}},
		Spec: &corev1.ServiceSpecArgs{
			Type: pulumi.String("ExternalName"), ExternalName: pulumi.String(InterceptorHost),
			Ports: corev1.ServicePortArray{corev1.ServicePortArgs{Name: pulumi.String("http"), Port: pulumi.Int(InterceptorPort), Protocol: pulumi.String("TCP")}},
		},
	}
}

// NewModelServing registers the serving namespace, priorities, the API key,
// each model (weights cache, download, vllm-stack release, network policy,
// TLS ingress), KEDA and the batch CronJobs.
func NewModelServing(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*ModelServing, error) {
	if args == nil || args.Workload == nil {
		return nil, fmt.Errorf("model serving %s: args with a workload provider are required", name)
	}
	ms := &ModelServing{Endpoints: map[string]ModelEndpoint{}}
	if err := ctx.RegisterComponentResource(ModelServingType, name, ms, opts...); err != nil {
		return nil, fmt.Errorf("model serving %s: %w", name, err)
	}
	plan := args.Plan
	o := plan.Options
	ns := o.Namespace
	child := []pulumi.ResourceOption{pulumi.Parent(ms), pulumi.Provider(args.Workload)}
	fail := func(what string, err error) (*ModelServing, error) {
		return nil, fmt.Errorf("model serving %s: %s: %w", name, what, err)
	}

	namespaces := map[string]pulumi.Resource{}
	for _, n := range plan.Namespaces() {
		res, err := corev1.NewNamespace(ctx, name+n.Suffix, podsecurity.Namespace(n.Name, n.Level), child...)
		if err != nil {
			return fail(n.Role+" namespace", err)
		}
		namespaces[n.Role] = res
	}
	nsRes := namespaces[podsecurity.Serving]
	inNS := append(child, pulumi.DependsOn([]pulumi.Resource{nsRes}))

	// Real-time inference always wins over batch work for GPUs.
	for _, pc := range PriorityClasses {
		if _, err := schedulingv1.NewPriorityClass(ctx, name+"-"+pc.Name, &schedulingv1.PriorityClassArgs{
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(pc.Name)},
			Value:    pulumi.Int(pc.Value), Description: pulumi.String(pc.Description), PreemptionPolicy: pulumi.String(pc.Preemption),
		}, child...); err != nil {
			return fail("priority class", err)
		}
	}

	var key pulumi.StringInput
	if o.APIKey != "" {
		key = o.APIKey.Output()
	} else {
		pw, err := random.NewRandomPassword(ctx, name+"-api-key", &random.RandomPasswordArgs{Length: pulumi.Int(48), Special: pulumi.Bool(false)}, pulumi.Parent(ms))
		if err != nil {
			return fail("api key", err)
		}
		key = pw.Result
	}
	ms.APIKey = pulumi.ToSecret(key.ToStringOutput()).(pulumi.StringOutput)
	secrets := []struct {
		name, resource string
		data           func() pulumi.StringMap
		needed         bool
	}{
		{APIKeySecret, "-api-key-secret", func() pulumi.StringMap { return pulumi.StringMap{APIKeyField: ms.APIKey} }, true},
		{StorageSecret, "-storage-secret", func() pulumi.StringMap { return plan.Storage.Env() }, len(plan.Engines) > 0},
	}
	for _, sec := range secrets {
		if !sec.needed {
			continue
		}
		_, ext, err := secret.Place(ctx, name+sec.resource, ns, sec.name, "", sec.data(), plan.Rendering, inNS...)
		if err != nil {
			return fail("secret "+sec.name, err)
		}
		if ext != nil {
			ms.ExternalSecrets = append(ms.ExternalSecrets, *ext)
		}
	}

	var downloadDeps []pulumi.Resource
	if len(plan.Engines) > 0 {
		sa := &corev1.ServiceAccountArgs{Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(DownloadServiceAccount), Namespace: pulumi.String(ns)}}
		if ann := plan.Identity.ServiceAccountAnnotations; len(ann) > 0 {
			sa.Metadata.(*metav1.ObjectMetaArgs).Annotations = pulumi.ToStringMap(ann)
		}
		saRes, err := corev1.NewServiceAccount(ctx, name+"-download-sa", sa, inNS...)
		if err != nil {
			return fail("download service account", err)
		}
		downloadDeps = append(downloadDeps, saRes)
	}
	if len(plan.Engines)+len(plan.Ollamas) > 0 {
		if _, err := corev1.NewServiceAccount(ctx, name+"-model-server-sa", &corev1.ServiceAccountArgs{
			Metadata:                     &metav1.ObjectMetaArgs{Name: pulumi.String(ModelServerAccount), Namespace: pulumi.String(ns)},
			AutomountServiceAccountToken: pulumi.Bool(false),
		}, inNS...); err != nil {
			return fail("model server service account", err)
		}
	}
	for _, np := range plan.NetworkPolicies() {
		npName := np["metadata"].(map[string]any)["name"].(string)
		if _, err := plain.Object(ctx, name+"-netpol-"+npName, np, inNS...); err != nil {
			return fail("network policy "+npName, err)
		}
	}

	// KEDA and its HTTP add-on bring the CRDs of the engines' ScaledObjects
	// and InterceptorRoutes.
	var keda []pulumi.Resource
	if plan.InstallsKEDA() {
		kns := namespaces[podsecurity.KEDA]
		rel := helm.Release{Name: "keda", Chart: o.Charts.KEDA, Dir: plan.ChartDir, Values: map[string]any{}}
		k, err := helmv4.NewChart(ctx, name+"-keda", rel.Args(KEDANamespace, plan.SkipAwait),
			append(child, pulumi.DependsOn([]pulumi.Resource{kns}))...)
		if err != nil {
			return fail("keda", err)
		}
		keda = append(keda, k)
		if plan.InstallsHTTPAddOn() {
			rel := helm.Release{Name: "keda-add-ons-http", Chart: o.Charts.HTTPAddOn, Dir: plan.ChartDir, Values: HTTPAddOnValues()}
			h, err := helmv4.NewChart(ctx, name+"-keda-http", rel.Args(KEDANamespace, plan.SkipAwait),
				append(child, pulumi.DependsOn([]pulumi.Resource{k}))...)
			if err != nil {
				return fail("keda http add-on", err)
			}
			keda = append(keda, h)
		}
	}

	for _, engine := range plan.Engines {
		m := engine
		claim, err := corev1.NewPersistentVolumeClaim(ctx, name+"-"+m.Name+"-weights",
			modelClaim(WeightsClaim(m.Name), ns, "ReadWriteMany", o.StorageClass, WeightsClaimGi(m.Weights())), inNS...)
		if err != nil {
			return fail("weights claim "+m.Name, err)
		}
		afterClaim := append(child, pulumi.DependsOn([]pulumi.Resource{nsRes, claim}))
		if _, err := plain.Object(ctx, name+"-"+m.Name+"-download", DownloadJob(ns, m, *plan.Storage), append(afterClaim, pulumi.DependsOn(downloadDeps))...); err != nil {
			return fail("download job "+m.Name, err)
		}
		rel := helm.Release{Name: Release(m.Name), Chart: o.Charts.VLLMStack, Dir: plan.ChartDir, Values: VLLMValues(engine)}
		chart, err := helmv4.NewChart(ctx, name+"-"+m.Name, rel.Args(ns, plan.SkipAwait),
			append(child, pulumi.DependsOn([]pulumi.Resource{nsRes, claim}), pulumi.Transforms([]pulumi.ResourceTransform{LeaveReplicasToKEDA}))...)
		if err != nil {
			return fail("vllm-stack "+m.Name, err)
		}
		if _, err := plain.Object(ctx, name+"-"+m.Name+"-scaling", ScaledObject(ns, engine),
			append(child, pulumi.DependsOn(append([]pulumi.Resource{chart}, keda...)))...); err != nil {
			return fail("scaled object "+m.Name, err)
		}
		if m.ScalesFromZero() {
			if _, err := plain.Object(ctx, name+"-"+m.Name+"-route", InterceptorRoute(ns, m),
				append(child, pulumi.DependsOn(append([]pulumi.Resource{nsRes}, keda...)))...); err != nil {
				return fail("interceptor route "+m.Name, err)
			}
			if _, err := corev1.NewService(ctx, name+"-"+m.Name+"-wake", wakeService(ns, m), inNS...); err != nil {
				return fail("wake service "+m.Name, err)
			}
		}
		if _, err := plain.Object(ctx, name+"-"+m.Name+"-servicemonitor", EngineServiceMonitor(ns, engine), inNS...); err != nil {
			return fail("service monitor "+m.Name, err)
		}
		if _, err := plain.Object(ctx, name+"-"+m.Name+"-netpol", NetworkPolicy(ns, m, o), inNS...); err != nil {
			return fail("network policy "+m.Name, err)
		}
		ep := ModelEndpoint{Pool: m.Pool.Name, Internal: Endpoint(ns, m), Model: m.Name, Sizing: m.Sizing()}
		if m.Hostname != "" {
			ing := Ingress(ns, m, o)
			if plan.SkipAwait {
				// the address comes from the ingress controller, later
				ing["metadata"].(map[string]any)["annotations"].(map[string]any)["pulumi.com/skipAwait"] = "true"
			}
			if _, err := plain.Object(ctx, name+"-"+m.Name+"-ingress", ing, inNS...); err != nil {
				return fail("ingress "+m.Name, err)
			}
			ep.Public = "https://" + m.Hostname + "/v1"
		}
		ms.Endpoints[m.Name] = ep
	}

	for _, srv := range plan.Ollamas {
		ep, err := ms.serveOllama(ctx, name, plan, srv, child, inNS)
		if err != nil {
			return fail("ollama "+srv.Name, err)
		}
		ms.Endpoints[srv.Name] = ep
	}

	inBatch := append(child, pulumi.DependsOn([]pulumi.Resource{namespaces[podsecurity.Batch]}))
	if len(plan.Jobs) > 0 {
		if _, err := plain.Object(ctx, name+"-batch-netpol", DenyIngress(o.BatchNamespace), inBatch...); err != nil {
			return fail("batch network policy", err)
		}
	}
	for _, j := range plan.Jobs {
		if _, err := plain.Object(ctx, name+"-batch-"+j.Name, CronJob(o.BatchNamespace, j), inBatch...); err != nil {
			return fail("batch job "+j.Name, err)
		}
	}

	if err := ctx.RegisterResourceOutputs(ms, pulumi.Map{"apiKey": ms.APIKey}); err != nil {
		return fail("outputs", err)
	}
	return ms, nil
}
