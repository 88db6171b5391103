package serving

import (
	"fmt"
	"math"
	"slices"

	"github.com/natron/gpu-node-pools/components/ollama"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/component"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
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
	Ollamas []ollama.Server
	Jobs    []Job
	// Source is the stack's chart source. Rendering, Secrets with secret
	// values are not written (they would land in the files in plain
	// text); ExternalSecrets names what to provide.
	Source helm.Source
	// PodSecurity are the levels the namespaces enforce, by role.
	PodSecurity podsecurity.Spec
	// ModelKeys are the models' own API keys, by model (a model without
	// one takes the shared key).
	ModelKeys map[string]secret.Secret
}

// InstallsKEDA is whether the program installs KEDA: for models, unless the
// cluster runs its own. Rendered without a cluster, Helm assumes Kubernetes
// v1.20, which the KEDA chart refuses: GitOps installs bring KEDA through
// their pipeline.
func (p Resolved) InstallsKEDA() bool {
	return p.Options.InstallKEDA != nil && *p.Options.InstallKEDA && len(p.Engines) > 0 && !p.Source.Rendering
}

// InstallsHTTPAddOn is whether KEDA's HTTP add-on comes with it: for
// models that scale from zero.
func (p Resolved) InstallsHTTPAddOn() bool {
	return p.InstallsKEDA() && slices.ContainsFunc(p.Engines, Engine.ScalesFromZero)
}

// needsSharedKey is whether a model serves with the stack's shared key
// (a stack with batch jobs alone keeps one too, as it always had).
func (p Resolved) needsSharedKey() bool {
	if len(p.Engines)+len(p.Ollamas) == 0 {
		return true
	}
	return slices.ContainsFunc(p.Engines, func(e Engine) bool { return e.APIKeyField == APIKeyField }) ||
		slices.ContainsFunc(p.Ollamas, func(o ollama.Server) bool { return o.APIKeyField == APIKeyField })
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

	// APIKey is the key every model without its own expects, a secret
	// (SharedKey: there is one).
	APIKey    pulumi.StringOutput
	SharedKey bool
	// ModelKeys are the models' own keys, by model, secrets.
	ModelKeys map[string]pulumi.StringOutput
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
	if e.KVCacheDtype == "fp8" {
		out["kvCacheDtype"] = e.KVCacheDtype
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
		Model: m.Model(), Source: m.Source, Checksums: m.Checksums, TrustRemoteCode: m.TrustRemoteCode,
		Hostname: m.Hostname, Pool: pool, MinReplicas: m.Replicas(),
		QueueDepthTarget: m.QueueDepthTarget, Image: o.Image,
		APIKeySecret: APIKeySecret, APIKeyField: m.KeyField(), ProxyImage: o.ProxyImage, DownloadImage: o.RcloneImage, WaitImage: o.WaitImage,
		WeightsClaim: WeightsClaim(m.Name), BandwidthMBps: o.BandwidthMBps,
		PrometheusAddress: o.PrometheusAddress, ServiceMonitorLabels: serviceMonitorLabels,
		RuntimeClass: runtimeClass, PriorityClass: ServingPriority,
	}
}

// WakeService is a scaled-to-zero model's in-cluster name: it leads to
// the gateway, which checks the model's key before the interceptor wakes
// the model; an Ingress in the model's namespace names it as its backend.
func WakeService(ns string, e Engine) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": RouteName(e.Name), "namespace": ns, "labels": map[string]any{"gpu-node-pools/model": e.Name}},
		"spec": map[string]any{
			"selector": kube.AnyMap(GatewayPods),
			"ports":    []any{map[string]any{"name": "http", "port": InterceptorPort, "targetPort": InterceptorPort, "protocol": "TCP"}},
		},
	}
}

// NewModelServing registers the serving namespace, priorities, the API key,
// each model (weights cache, download, vllm-stack release, network policy,
// TLS ingress), KEDA and the batch CronJobs.
func NewModelServing(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*ModelServing, error) {
	ms := &ModelServing{Endpoints: map[string]ModelEndpoint{}, ModelKeys: map[string]pulumi.StringOutput{}}
	child, err := component.Start(ctx, ModelServingType, name, ms, args != nil && args.Workload != nil, "a workload provider",
		func() pulumi.ProviderResource { return args.Workload }, opts...)
	if err != nil {
		return nil, err
	}
	r := &registrar{ctx: ctx, name: name, ms: ms, plan: args.Plan, ns: args.Plan.Options.Namespace, child: child}
	// The order is the order of registration, and of dependencies.
	steps := []func() error{r.registerNamespaces, r.registerPriorityClasses, r.registerSecrets, r.registerAccounts,
		r.registerNamespacePolicies, r.registerKEDA, r.registerEngines, r.registerGateway, r.registerOllamas, r.registerBatch}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("model serving %s: %w", name, err)
		}
	}
	outputs := pulumi.Map{}
	if ms.SharedKey = args.Plan.needsSharedKey(); ms.SharedKey {
		outputs["apiKey"] = ms.APIKey
	}
	if len(ms.ModelKeys) > 0 {
		outputs["modelKeys"] = pulumi.ToSecret(pulumi.ToStringMapOutput(ms.ModelKeys))
	}
	if err := ctx.RegisterResourceOutputs(ms, outputs); err != nil {
		return nil, fmt.Errorf("model serving %s: outputs: %w", name, err)
	}
	return ms, nil
}
