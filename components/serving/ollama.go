package serving

import (
	"cmp"
	"maps"

	"github.com/natron/gpu-node-pools/components/ollama"

	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/models"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Runtimes serve a model: vLLM (the default) from weights in the stack's
// object store, or Ollama, for small quantized models and development,
// from the Ollama registry.
const (
	VLLM   = "vllm"
	Ollama = ollama.Runtime
)

// Runtimes lists them.
var Runtimes = []string{VLLM, Ollama}

// IsOllama reports whether Ollama serves the model.
func (m ModelSpec) IsOllama() bool { return m.Runtime == Ollama }

// VLLMModels counts the models vLLM serves: those whose weights come from
// the stack's storage.
func VLLMModels(ms []ModelSpec) int {
	n := 0
	for _, m := range ms {
		if !m.IsOllama() {
			n++
		}
	}
	return n
}

// validateOllama checks a model for runtime ollama as written: the source
// is a registry reference, and vLLM's own keys are refused rather than
// ignored.
func (m ModelSpec) validateOllama(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := ollama.ParseRef(m.Source); err != nil || m.Source == "" {
		why := "required"
		if err != nil {
			why = err.Error()
		}
		errs = append(errs, fielderr.Invalid(p.Child("source"), m.Source, "must be an Ollama model such as llama3.2:3b or llama3.1:8b-instruct-q8_0: %s", why))
	}
	if m.CatalogModel != "" {
		if _, ok := models.Known.Lookup(m.CatalogModel); !ok {
			errs = append(errs, fielderr.NotSupported(p.Child("model"), m.CatalogModel, models.Known.Names()))
		}
	}
	for _, k := range []struct {
		key string
		v   float64
	}{{"parametersB", m.ParametersB}, {"weightsGB", m.WeightsGB}} {
		if k.v < 0 {
			errs = append(errs, fielderr.Invalid(p.Child(k.key), k.v, "must be > 0 (or left out: from the source's tag or model)"))
		}
	}
	vllmOnly := []struct {
		key string
		set bool
		v   any
	}{
		{"dtype", m.Dtype != "", m.Dtype}, {"quantization", m.Quantization != "", m.Quantization},
		{"kvCacheDtype", m.KVCacheDtype != "", m.KVCacheDtype},
		{"tensorParallel", m.TensorParallel > 1, m.TensorParallel}, {"gpuMemoryUtilization", m.GPUMemoryUtilization != 0, m.GPUMemoryUtilization},
		{"queueDepthTarget", m.QueueDepthTarget != 0, m.QueueDepthTarget},
	}
	for _, k := range vllmOnly {
		if k.set {
			errs = append(errs, fielderr.Forbidden(p.Child(k.key), k.v, "is vLLM's; runtime ollama takes the quantization from the source's tag (such as llama3.1:8b-instruct-q8_0) and runs on one GPU resource"))
		}
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"checksums", m.Checksums != nil}, {"trustRemoteCode", m.TrustRemoteCode}} {
		if k.set {
			errs = append(errs, fielderr.Forbidden(p.Child(k.key), "(set)", "is for vLLM's weights store; runtime ollama pulls from the Ollama registry, which names every file by its digest"))
		}
	}
	if m.MinReplicas != nil && *m.MinReplicas != 1 {
		errs = append(errs, fielderr.Invalid(p.Child("minReplicas"), *m.MinReplicas, "must be 1 (or left out) for runtime ollama: one replica owns its model store"))
	}
	if m.MaxReplicas > 1 {
		errs = append(errs, fielderr.Invalid(p.Child("maxReplicas"), m.MaxReplicas, "must be 1 (or left out) for runtime ollama: one replica owns its model store"))
	}
	if m.MaxModelLen < 0 || m.MaxModelLen > 1<<20 {
		errs = append(errs, fielderr.Invalid(p.Child("maxModelLen"), m.MaxModelLen, "must be between 1 and %d tokens (or left out: %d), Ollama's context length", 1<<20, ollama.DefaultContext))
	}
	if m.Concurrency < 0 {
		errs = append(errs, fielderr.Invalid(p.Child("concurrency"), m.Concurrency, "must be >= 1 parallel request (or left out: %d)", ollama.DefaultParallel))
	}
	if m.Pool != "" && len(m.NodeSelector) > 0 {
		errs = append(errs, fielderr.Forbidden(p.Child("nodeSelector"), m.NodeSelector, "picks CPU nodes, for a model without pool; a GPU pool places the model itself"))
	}
	return append(errs, m.validateHostname(p)...)
}

// NewOllamaServer is how the program serves a validated Ollama model:
// on pool (nil for CPU nodes), sized from its catalog model (given, or
// the one the library reference pulls), else from parametersB or the
// size its tag names; sized is false when nothing does (ollama.SizeProblem).
func NewOllamaServer(m ModelSpec, pool *gpupool.Facts, o Options, runtimeClass string) (s ollama.Server, sized bool) {
	ref, _ := ollama.ParseRef(m.Source)
	s = ollama.Server{
		Name: m.Name, Ref: ref, Quantization: ref.Quantization(), WeightsGB: m.WeightsGB,
		ContextLength: cmp.Or(m.MaxModelLen, ollama.DefaultContext), Parallel: cmp.Or(m.Concurrency, ollama.DefaultParallel),
		Pool: pool, NodeSelector: maps.Clone(m.NodeSelector), Hostname: m.Hostname,
		Image: o.OllamaImage, ProxyImage: o.ProxyImage, StorageClass: o.StorageClass,
		APIKeyField: m.KeyField(), WaitImage: o.WaitImage,
	}
	if pool != nil {
		s.RuntimeClass = runtimeClass
	}
	if entry, ok := models.Known.Lookup(cmp.Or(m.CatalogModel, ref.CatalogModel())); ok {
		s.ParametersB, s.Shape = entry.ParametersB, entry.Shape
	}
	s.ParametersB = cmp.Or(m.ParametersB, s.ParametersB, ref.SizeB())
	if m.Shape != nil {
		s.Shape = *m.Shape
	}
	return s, s.ParametersB > 0 || s.WeightsGB > 0
}

// OllamaNetworkPolicy admits the ingress controller and the client
// namespaces to the proxy's port only: Ollama's own port is reachable
// from inside the pod alone, so every request passes the key check.
func OllamaNetworkPolicy(ns string, o ollama.Server, opts Options) map[string]any {
	sources := []any{fromNamespace(opts.IngressNamespace)}
	for _, c := range opts.ClientNamespaces {
		sources = append(sources, fromNamespace(c))
	}
	return netpol(ns, "model-"+o.Name, map[string]any{
		"podSelector": map[string]any{"matchLabels": ollama.Pods(o)},
		"policyTypes": []any{"Ingress"},
		"ingress":     []any{map[string]any{"from": sources, "ports": []any{tcp(ollama.ProxyPort)}}},
	})
}

// OllamaPod is what an Ollama model's pod takes from the serving
// namespace: the model servers' account and priority, the scratch mount,
// the API key.
var OllamaPod = ollama.Pod{ServiceAccount: ModelServerAccount, PriorityClass: ServingPriority, TmpPath: TmpPath,
	APIKeySecret: APIKeySecret}

// OllamaPullPods selects one model's pull Job pods.
func OllamaPullPods(o ollama.Server) map[string]any {
	return map[string]any{ComponentLabel: ollama.PullComponent, "gpu-node-pools/model": o.Name}
}

// OllamaRelease is an Ollama model's chart release: its values, and the
// patches that put Ollama behind the proxy on loopback.
func OllamaRelease(src helm.Source, srv ollama.Server, chart helm.Chart) helm.Release {
	rel := src.Release(srv.Release(), chart, ollama.Values(srv, OllamaPod))
	rel.Patches = ollama.Patches()
	return rel
}

// PrivateRanges are never a registry: the pull's egress excludes them,
// so an Ollama pod reaches nothing inside the cluster or the site's
// networks.
var PrivateRanges = []any{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16"}

// OllamaEgress lets a model's pull Job, and nothing else, reach the
// Ollama registry over HTTPS. Its blobs come from a CDN whose addresses
// change, so the policy admits public addresses on 443 rather than names;
// the server's pods, which never pull, reach nothing.
func OllamaEgress(ns string, o ollama.Server) map[string]any {
	return netpol(ns, "model-"+o.Name+"-pull", map[string]any{
		"podSelector": map[string]any{"matchLabels": OllamaPullPods(o)},
		"policyTypes": []any{"Egress"},
		"egress": []any{map[string]any{
			"to":    []any{map[string]any{"ipBlock": map[string]any{"cidr": "0.0.0.0/0", "except": PrivateRanges}}},
			"ports": []any{tcp(443)},
		}},
	})
}

// OllamaIngress publishes the model like a vLLM model: same TLS, same
// path, the proxy behind the chart's Service.
func OllamaIngress(ns string, o ollama.Server, opts Options) map[string]any {
	return modelIngress(ns, o.Name, o.Hostname, map[string]any{"name": o.Release(), "port": map[string]any{"number": 80}}, ResponseSeconds, opts)
}
