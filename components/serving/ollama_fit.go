package serving

import (
	"cmp"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/models"
)

// validateOllama checks a model for runtime ollama as written: the source
// is a registry reference, and vLLM's own keys are refused rather than
// ignored.
func (m ModelSpec) validateOllama(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := ParseOllamaRef(m.Source); err != nil || m.Source == "" {
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
		{"tensorParallel", m.TensorParallel > 1, m.TensorParallel}, {"gpuMemoryUtilization", m.GPUMemoryUtilization != 0, m.GPUMemoryUtilization},
		{"queueDepthTarget", m.QueueDepthTarget != 0, m.QueueDepthTarget},
	}
	for _, k := range vllmOnly {
		if k.set {
			errs = append(errs, fielderr.Forbidden(p.Child(k.key), k.v, "is vLLM's; runtime ollama takes the quantization from the source's tag (such as llama3.1:8b-instruct-q8_0) and runs on one GPU resource"))
		}
	}
	if m.MinReplicas != nil && *m.MinReplicas != 1 {
		errs = append(errs, fielderr.Invalid(p.Child("minReplicas"), *m.MinReplicas, "must be 1 (or left out) for runtime ollama: one replica owns its model store"))
	}
	if m.MaxReplicas > 1 {
		errs = append(errs, fielderr.Invalid(p.Child("maxReplicas"), m.MaxReplicas, "must be 1 (or left out) for runtime ollama: one replica owns its model store"))
	}
	if m.MaxModelLen < 0 || m.MaxModelLen > 1<<20 {
		errs = append(errs, fielderr.Invalid(p.Child("maxModelLen"), m.MaxModelLen, "must be between 1 and %d tokens (or left out: %d), Ollama's context length", 1<<20, DefaultOllamaContext))
	}
	if m.Concurrency < 0 {
		errs = append(errs, fielderr.Invalid(p.Child("concurrency"), m.Concurrency, "must be >= 1 parallel request (or left out: %d)", DefaultOllamaParallel))
	}
	if m.Pool != "" && len(m.NodeSelector) > 0 {
		errs = append(errs, fielderr.Forbidden(p.Child("nodeSelector"), m.NodeSelector, "picks CPU nodes, for a model without pool; a GPU pool places the model itself"))
	}
	return append(errs, m.validateHostname(p)...)
}

// NewOllamaServer is how the program serves a validated Ollama model:
// on pool (nil for CPU nodes), sized from its catalog model (given, or
// the one the library reference pulls), else from parametersB or the
// size its tag names; sized is false when nothing does (OllamaSizeProblem).
func NewOllamaServer(m ModelSpec, pool *gpupool.Facts, o Options, runtimeClass string) (s OllamaServer, sized bool) {
	ref, _ := ParseOllamaRef(m.Source)
	s = OllamaServer{
		Name: m.Name, Ref: ref, Quantization: ref.Quantization(), WeightsGB: m.WeightsGB,
		ContextLength: cmp.Or(m.MaxModelLen, DefaultOllamaContext), Parallel: cmp.Or(m.Concurrency, DefaultOllamaParallel),
		Pool: pool, NodeSelector: maps.Clone(m.NodeSelector), Hostname: m.Hostname,
		Image: o.OllamaImage, ProxyImage: o.ProxyImage, StorageClass: o.StorageClass,
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

// OllamaSizeProblem says, at the model's path p, that nothing sizes it.
func OllamaSizeProblem(p *field.Path, source string) *field.Error {
	return fielderr.Invalid(p.Child("source"), source, "names no size the program knows (no catalog model, no <n>b in its tag): set model (%s), parametersB or weightsGB",
		strings.Join(models.Known.Names(), ", "))
}

// OllamaFit checks an Ollama model against its GPU pool: the file, the KV
// cache of contextLength × parallel tokens and Ollama's runtime must fit
// one GPU resource (Ollama would otherwise run the layers that do not fit
// on the CPU, an order of magnitude slower). Nothing on CPU nodes, where
// the program sizes the container's memory from the same figures instead.
func OllamaFit(p *field.Path, o OllamaServer) field.ErrorList {
	if o.Pool == nil {
		return nil
	}
	m, have := o.Memory(), OllamaAvailableGiB(*o.Pool)
	if m.NeedGiB() <= have {
		return nil
	}
	what := "a whole " + o.Pool.GPUModel
	if s := fit.Sharing(*o.Pool); s != "" {
		what = s
	}
	return field.ErrorList{fielderr.Invalid(p.Child("pool"), o.Pool.Name,
		"does not hold %s (%s): it needs %.1f GiB (the %s file %.1f GiB, KV cache for %d tokens × %d parallel %.1f GiB, runtime %.1f GiB) and one GPU resource of pool %s is %s with %.1f GiB; pick a smaller tag (fewer parameters, or a lower quantization such as q4_K_M), a shorter maxModelLen, or a pool with more memory per GPU resource",
		o.Name, o.Ref.Short(), m.NeedGiB(), o.Quantization, m.WeightsGiB, o.ContextLength, o.Parallel, m.KVGiB, m.RuntimeGiB, o.Pool.Name, what, have)}
}

// String describes the server for the check summary.
func (o OllamaServer) String() string {
	where := "CPU nodes"
	if o.Pool != nil {
		where = o.Pool.Name
	}
	return fmt.Sprintf("model %s (ollama %s, %s, %.1f GB) on %s: context %d × %d parallel, %.1f GiB",
		o.Name, o.Ref.Short(), o.Quantization, o.Weights(), where, o.ContextLength, o.Parallel, o.Memory().NeedGiB())
}
