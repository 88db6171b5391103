package serving

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/models"
)

// Runtimes serve a model: vLLM (the default) from weights in the stack's
// object store, or Ollama, for small quantized models and development,
// from the Ollama registry.
const (
	VLLM   = "vllm"
	Ollama = "ollama"
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

// OllamaRef is a model in the Ollama registry: [host/][namespace/]model[:tag].
// Ollama's own rule (types/model/name.go, ParseName) fills what is left
// out: host registry.ollama.ai, namespace library, tag latest.
type OllamaRef struct {
	Host, Namespace, Model, Tag string
}

var (
	ollamaPart = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
	ollamaTag  = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,79}$`)
	sizeToken  = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?)b$`)
)

// ParseOllamaRef reads a source written for runtime ollama.
func ParseOllamaRef(s string) (OllamaRef, error) {
	r := OllamaRef{Host: "registry.ollama.ai", Namespace: "library", Tag: "latest"}
	if strings.Contains(s, "://") {
		return r, fmt.Errorf("is a URL; Ollama pulls from its registry by name (model:tag)")
	}
	rest := s
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		r.Tag, rest = rest[i+1:], rest[:i]
		if !ollamaTag.MatchString(r.Tag) {
			return r, fmt.Errorf("tag %q is not an Ollama tag (letters, digits, _ . -)", r.Tag)
		}
	}
	parts := strings.Split(rest, "/")
	switch len(parts) {
	case 1:
		r.Model = parts[0]
	case 2:
		r.Namespace, r.Model = parts[0], parts[1]
	case 3:
		r.Host, r.Namespace, r.Model = parts[0], parts[1], parts[2]
	default:
		return r, fmt.Errorf("has %d path parts; an Ollama model is [host/][namespace/]model[:tag]", len(parts))
	}
	for _, p := range parts {
		if !ollamaPart.MatchString(p) {
			return r, fmt.Errorf("part %q is not an Ollama name (letters, digits, _ . -)", p)
		}
	}
	return r, nil
}

// String is the reference as Ollama writes it in full.
func (r OllamaRef) String() string {
	return r.Host + "/" + r.Namespace + "/" + r.Model + ":" + r.Tag
}

// Short is the reference as `ollama pull` takes it: the library's models
// by name and tag alone.
func (r OllamaRef) Short() string {
	if r.Host == "registry.ollama.ai" && r.Namespace == "library" {
		return r.Model + ":" + r.Tag
	}
	return r.String()
}

// tokens are the tag's dash-separated words ("8b-instruct-q4_K_M").
func (r OllamaRef) tokens() []string { return strings.Split(strings.ToLower(r.Tag), "-") }

// SizeB is the parameter count the tag names ("8b", "1.5b"), 0 when it
// names none.
func (r OllamaRef) SizeB() float64 {
	for _, t := range r.tokens() {
		if m := sizeToken.FindStringSubmatch(t); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			return v
		}
	}
	return 0
}

// Quantization is the llama.cpp file type the tag names (q4_K_M, q8_0,
// fp16), else the build the library's default tag of that size is (its
// tag page lists each tag's file), else Q4_K_M, the build most library
// models default to.
func (r OllamaRef) Quantization() string {
	for _, t := range r.tokens() {
		if q, ok := ggufTypes[t]; ok {
			return q
		}
	}
	if e, ok := r.libraryEntry(); ok {
		return e.quant
	}
	return DefaultOllamaQuantization
}

// DefaultOllamaQuantization is the library's default build.
const DefaultOllamaQuantization = "Q4_K_M"

// GGUFBitsPerWeight is the stored width of a GGUF file type, all tensors
// included (llama.cpp keeps embeddings and the output layer wider): the
// file sizes llama-quantize prints for each type at Llama-3-8B
// (ggml-org/llama.cpp tools/quantize/quantize.cpp, QUANT_OPTIONS, e.g.
// "Q4_K_M: 4.58G @ Llama-3-8B", in GiB) over its 8.03 billion parameters;
// F16 and BF16 are 16 bits. Ollama stores the same GGUF files.
var GGUFBitsPerWeight = func() map[string]float64 {
	const params = 8.03e9
	out := map[string]float64{"F16": 16, "BF16": 16}
	for t, gib := range map[string]float64{
		"Q2_K": 2.96, "Q3_K_S": 3.41, "Q3_K_M": 3.74, "Q3_K_L": 4.03,
		"Q4_0": 4.34, "Q4_1": 4.78, "Q4_K_S": 4.37, "Q4_K_M": 4.58,
		"Q5_0": 5.21, "Q5_1": 5.65, "Q5_K_S": 5.21, "Q5_K_M": 5.33,
		"Q6_K": 6.14, "Q8_0": 7.96,
	} {
		out[t] = gib * (1 << 30) * 8 / params
	}
	return out
}()

// ggufTypes finds a file type by the lower-case word in an Ollama tag
// (q4_k_m; fp16 is F16).
var ggufTypes = func() map[string]string {
	out := map[string]string{"fp16": "F16"}
	for t := range GGUFBitsPerWeight {
		out[strings.ToLower(t)] = t
	}
	return out
}()

// GGUFTypes lists the file types the fit check knows.
func GGUFTypes() []string {
	var out []string
	for t := range GGUFBitsPerWeight {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// libraryModel is one size of an Ollama library model: the catalog model
// it is (its exact parameter count and KV shape) and the build its
// default tag pulls.
type libraryModel struct{ size, catalog, quant string }

// ollamaLibrary are the Ollama library's models the program knows, by
// name; the first size is what the name alone (or :latest) pulls. The
// builds are those of the library's tag pages (ollama.com/library/<name>/
// tags): most default to Q4_K_M; llama3.2:1b to Q8_0, gemma2 and mistral
// to Q4_0.
var ollamaLibrary = map[string][]libraryModel{
	"llama3.1": {{"8b", "llama-3.1-8b", "Q4_K_M"}, {"70b", "llama-3.1-70b", "Q4_K_M"}},
	"llama3.2": {{"3b", "llama-3.2-3b", "Q4_K_M"}, {"1b", "llama-3.2-1b", "Q8_0"}},
	"llama3.3": {{"70b", "llama-3.3-70b", "Q4_K_M"}},
	"mistral":  {{"7b", "mistral-7b", "Q4_0"}},
	"qwen2.5":  {{"7b", "qwen2.5-7b", "Q4_K_M"}, {"14b", "qwen2.5-14b", "Q4_K_M"}, {"32b", "qwen2.5-32b", "Q4_K_M"}, {"72b", "qwen2.5-72b", "Q4_K_M"}},
	"qwen3":    {{"8b", "qwen3-8b", "Q4_K_M"}, {"14b", "qwen3-14b", "Q4_K_M"}, {"32b", "qwen3-32b", "Q4_K_M"}},
	"gemma2":   {{"9b", "gemma-2-9b", "Q4_0"}, {"27b", "gemma-2-27b", "Q4_0"}},
}

// libraryEntry is the library model a reference pulls, if the program
// knows it.
func (r OllamaRef) libraryEntry() (libraryModel, bool) {
	sizes, ok := ollamaLibrary[r.Model]
	if !ok || r.Host != "registry.ollama.ai" || r.Namespace != "library" {
		return libraryModel{}, false
	}
	size := ""
	for _, t := range r.tokens() {
		if sizeToken.MatchString(t) {
			size = t
		}
	}
	if size == "" {
		return sizes[0], true
	}
	for _, s := range sizes {
		if s.size == size {
			return s, true
		}
	}
	return libraryModel{}, false
}

// CatalogModel is the catalog model a library reference pulls, "" when
// the program does not know it.
func (r OllamaRef) CatalogModel() string {
	e, _ := r.libraryEntry()
	return e.catalog
}

// Ollama defaults: Ollama's context length depends on the GPU's memory
// unless set, so the program always sets it; one request at a time.
const (
	DefaultOllamaContext  = 4096
	DefaultOllamaParallel = 1
)

// OllamaServer is how one Ollama model is served: decided once, when the
// stack's plan is made.
type OllamaServer struct {
	// Name is the model's name in config, and the id clients ask for.
	Name string
	Ref  OllamaRef
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
}

// Weights is the size in GB of the model's file.
func (o OllamaServer) Weights() float64 {
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
	OllamaGraphGiB   = 0.6
	OllamaContextGiB = 0.5
)

// OllamaMemory is what one Ollama replica holds on its GPU (or in host
// memory on CPU nodes).
type OllamaMemory struct {
	WeightsGiB, KVGiB, RuntimeGiB float64
}

// NeedGiB is the total.
func (m OllamaMemory) NeedGiB() float64 { return m.WeightsGiB + m.KVGiB + m.RuntimeGiB }

// Memory sizes the replica: the KV cache is 16-bit (Ollama's default
// OLLAMA_KV_CACHE_TYPE, f16) for ContextLength × Parallel tokens.
func (o OllamaServer) Memory() OllamaMemory {
	shape := o.Shape
	if shape.IsZero() {
		shape = models.Known.Nearest(cmp.Or(o.ParametersB, o.Weights()*8/GGUFBitsPerWeight[o.Quantization])).Shape
	}
	tokens := float64(o.ContextLength * max(o.Parallel, 1))
	return OllamaMemory{
		WeightsGiB: o.Weights() * 1e9 / fit.GiB,
		KVGiB:      tokens * float64(shape.KVBytesPerToken(2)) / fit.GiB,
		RuntimeGiB: OllamaGraphGiB + OllamaContextGiB,
	}
}

// AvailableGiB is what one GPU resource of the pool gives an Ollama
// replica: a MIG slice's memory, or a time-sliced share of the GPU's,
// less what CUDA does not report.
func OllamaAvailableGiB(pool gpupool.Facts) float64 {
	return float64(pool.MemoryPerGPUResourceGB) - fit.CUDAHiddenGiB/float64(max(pool.TimeSlicing, 1))
}

// MemoryGi is the container's memory request and limit in Gi: on CPU
// nodes all of Memory, on GPU nodes what loading passes through host
// memory (Ollama maps the file) and the server itself.
func (o OllamaServer) MemoryGi() int {
	m := o.Memory()
	if o.Pool == nil {
		return int(math.Ceil(m.NeedGiB())) + 1
	}
	return int(math.Ceil(m.WeightsGiB)) + 2
}

// Release is an Ollama model's Helm release, and (as the chart names
// what it makes after a release that contains its name) its Deployment
// and Service.
func (o OllamaServer) Release() string { return "ollama-" + o.Name }

// Claim names its model store.
func (o OllamaServer) Claim() string { return "ollama-" + o.Name }

// ClaimGi sizes the store: the model file, a tenth more, and 2 Gi for
// Ollama's key pair and a pull's partial files.
func (o OllamaServer) ClaimGi() int {
	return int(math.Ceil(o.Weights()*1e9/fit.GiB*1.1)) + 2
}

// OllamaEndpoint is the model's in-cluster OpenAI-compatible endpoint
// (the chart's Service, which the program points at the proxy).
func OllamaEndpoint(ns string, o OllamaServer) string {
	return fmt.Sprintf("http://%s.%s.svc/v1", o.Release(), ns)
}

// Sizing is what the stack outputs about how the model is served.
func (o OllamaServer) Sizing() map[string]any {
	m := o.Memory()
	out := map[string]any{
		"runtime": Ollama, "source": o.Ref.Short(), "quantization": o.Quantization,
		"weightsGB": math.Round(o.Weights()*100) / 100, "contextLength": o.ContextLength, "parallel": o.Parallel,
		"memoryGiB": math.Ceil(m.NeedGiB()*10) / 10,
	}
	if o.Pool == nil {
		out["nodes"] = "cpu"
	}
	return out
}
