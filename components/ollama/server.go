// Package ollama serves small quantized models with Ollama: what a model
// reference in the Ollama registry names, how much memory one server
// needs and whether it fits a GPU resource, the chart's values, and the
// API-key proxy in front of Ollama, which has no authentication of its
// own. serving registers the model's objects with it.
package ollama

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/models"
)

// Runtime is the models' runtime key value: runtime ollama.
const Runtime = "ollama"

// Ollama defaults: Ollama's context length depends on the GPU's memory
// unless set, so the program always sets it; one request at a time.
const (
	DefaultContext  = 4096
	DefaultParallel = 1
)

// Server is how one Ollama model is served: decided once, when the
// stack's plan is made.
type Server struct {
	// Name is the model's name in config, and the id clients ask for.
	Name string
	Ref  Ref
	// Quantization is the GGUF file type; ParametersB and WeightsGB size
	// it (WeightsGB wins when given); Shape sizes the KV cache (zero: the
	// nearest catalog model's).
	Quantization string
	ParametersB  float64
	WeightsGB    float64
	Shape        models.Shape
	// ContextLength and Parallel are OLLAMA_CONTEXT_LENGTH and
	// OLLAMA_NUM_PARALLEL: the KV cache holds both multiplied.
	ContextLength, Parallel int
	// Pool is the GPU pool, nil on CPU nodes (NodeSelector picks them,
	// else any node without the GPU label).
	Pool         *gpupool.Facts
	NodeSelector map[string]string
	Hostname     string
	Image        string
	ProxyImage   string
	StorageClass string
	// RuntimeClass is as for Engine, on GPU pools.
	RuntimeClass string
	// APIKeyField is the field of the API-key Secret holding its key.
	APIKeyField string
	// WaitImage runs the init container that waits for the pull.
	WaitImage string
}

// Weights is the size in GB of the model's file.
func (o Server) Weights() float64 {
	if o.WeightsGB > 0 {
		return o.WeightsGB
	}
	return o.ParametersB * GGUFBitsPerWeight[o.Quantization] / 8
}

// Ollama's runtime memory beyond weights and KV cache: the compute graph
// (an Ollama log of a 14B model at 8192 tokens and 2 parallel shows
// memory.graph.full="519.5 MiB", atineiatte/deep-research-at-home issue
// 14) and the CUDA context of the runner, which a llama.cpp process keeps
// apart from its buffers.
const (
	GraphGiB   = 0.6
	ContextGiB = 0.5
)

// Memory is what one Ollama replica holds on its GPU (or in host
// memory on CPU nodes).
type Memory struct {
	WeightsGiB, KVGiB, RuntimeGiB float64
}

// NeedGiB is the total.
func (m Memory) NeedGiB() float64 { return m.WeightsGiB + m.KVGiB + m.RuntimeGiB }

// Memory sizes the replica: the KV cache is 16-bit (Ollama's default
// OLLAMA_KV_CACHE_TYPE, f16) for ContextLength × Parallel tokens.
func (o Server) Memory() Memory {
	shape := o.Shape
	if shape.IsZero() {
		shape = models.Known.Nearest(cmp.Or(o.ParametersB, o.Weights()*8/GGUFBitsPerWeight[o.Quantization])).Shape
	}
	tokens := float64(o.ContextLength * max(o.Parallel, 1))
	return Memory{
		WeightsGiB: o.Weights() * 1e9 / fit.GiB,
		KVGiB:      tokens * float64(shape.KVBytesPerToken(2)) / fit.GiB,
		RuntimeGiB: GraphGiB + ContextGiB,
	}
}

// AvailableGiB is what one GPU resource of the pool gives an Ollama
// replica: a MIG slice's memory, or a time-sliced share of the GPU's, as
// the driver reports it (fit.DeviceGiB), less what CUDA does not report.
func AvailableGiB(pool gpupool.Facts) float64 {
	return (fit.DeviceGiB(pool) - fit.CUDAHiddenGiB) / float64(max(pool.TimeSlicing, 1))
}

// MemoryGi is the container's memory request and limit in Gi: on CPU
// nodes all of Memory, on GPU nodes what loading passes through host
// memory (Ollama maps the file) and the server itself.
func (o Server) MemoryGi() int {
	m := o.Memory()
	if o.Pool == nil {
		return int(math.Ceil(m.NeedGiB())) + 1
	}
	return int(math.Ceil(m.WeightsGiB)) + 2
}

// Release is an Ollama model's Helm release, and (as the chart names
// what it makes after a release that contains its name) its Deployment
// and Service.
func (o Server) Release() string { return "ollama-" + o.Name }

// Claim names its model store.
func (o Server) Claim() string { return "ollama-" + o.Name }

// SourceKey names one source's pull: a new source is a new pull Job.
func (o Server) SourceKey() string {
	sum := sha256.Sum256([]byte(o.Ref.Short()))
	return hex.EncodeToString(sum[:6])
}

// Marker is the file the pull Job writes once the store holds the
// model's source under its name.
func (o Server) Marker() string { return Home + "/.pulled-" + o.SourceKey() }

// ClaimGi sizes the store: the model file, a tenth more, and 2 Gi for
// Ollama's key pair and a pull's partial files.
func (o Server) ClaimGi() int {
	return int(math.Ceil(o.Weights()*1e9/fit.GiB*1.1)) + 2
}

// Endpoint is the model's in-cluster OpenAI-compatible endpoint
// (the chart's Service, which the program points at the proxy).
func Endpoint(ns string, o Server) string {
	return fmt.Sprintf("http://%s.%s.svc/v1", o.Release(), ns)
}

// Sizing is what the stack outputs about how the model is served.
func (o Server) Sizing() map[string]any {
	m := o.Memory()
	out := map[string]any{
		"runtime": Runtime, "source": o.Ref.Short(), "quantization": o.Quantization,
		"weightsGB": math.Round(o.Weights()*100) / 100, "contextLength": o.ContextLength, "parallel": o.Parallel,
		"memoryGiB": math.Ceil(m.NeedGiB()*10) / 10,
	}
	if o.Pool == nil {
		out["nodes"] = "cpu"
	}
	return out
}

// SizeProblem says, at the model's path p, that nothing sizes it.
func SizeProblem(p *field.Path, source string) *field.Error {
	return fielderr.Invalid(p.Child("source"), source, "names no size the program knows (no catalog model, no <n>b in its tag): set model (%s), parametersB or weightsGB",
		strings.Join(models.Known.Names(), ", "))
}

// Fit checks an Ollama model against its GPU pool: the file, the KV
// cache of contextLength × parallel tokens and Ollama's runtime must fit
// one GPU resource (Ollama would otherwise run the layers that do not fit
// on the CPU, an order of magnitude slower). Nothing on CPU nodes, where
// the program sizes the container's memory from the same figures instead.
func Fit(p *field.Path, o Server) field.ErrorList {
	if o.Pool == nil {
		return nil
	}
	m, have := o.Memory(), AvailableGiB(*o.Pool)
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
func (o Server) String() string {
	where := "CPU nodes"
	if o.Pool != nil {
		where = o.Pool.Name
	}
	return fmt.Sprintf("model %s (ollama %s, %s, %.1f GB) on %s: context %d × %d parallel, %.1f GiB",
		o.Name, o.Ref.Short(), o.Quantization, o.Weights(), where, o.ContextLength, o.Parallel, o.Memory().NeedGiB())
}
