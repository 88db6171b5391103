package ollama

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Ref is a model in the Ollama registry: [host/][namespace/]model[:tag].
// Ollama's own rule (types/model/name.go, ParseName) fills what is left
// out: host registry.ollama.ai, namespace library, tag latest.
type Ref struct {
	Host, Namespace, Model, Tag string
}

var (
	namePart  = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
	tagRe     = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,79}$`)
	sizeToken = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?)b$`)
)

// ParseRef reads a source written for runtime ollama.
func ParseRef(s string) (Ref, error) {
	r := Ref{Host: "registry.ollama.ai", Namespace: "library", Tag: "latest"}
	if strings.Contains(s, "://") {
		return r, fmt.Errorf("is a URL; Ollama pulls from its registry by name (model:tag)")
	}
	rest := s
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		r.Tag, rest = rest[i+1:], rest[:i]
		if !tagRe.MatchString(r.Tag) {
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
		if !namePart.MatchString(p) {
			return r, fmt.Errorf("part %q is not an Ollama name (letters, digits, _ . -)", p)
		}
	}
	return r, nil
}

// String is the reference as Ollama writes it in full.
func (r Ref) String() string {
	return r.Host + "/" + r.Namespace + "/" + r.Model + ":" + r.Tag
}

// Short is the reference as `ollama pull` takes it: the library's models
// by name and tag alone.
func (r Ref) Short() string {
	if r.Host == "registry.ollama.ai" && r.Namespace == "library" {
		return r.Model + ":" + r.Tag
	}
	return r.String()
}

// tokens are the tag's dash-separated words ("8b-instruct-q4_K_M").
func (r Ref) tokens() []string { return strings.Split(strings.ToLower(r.Tag), "-") }

// SizeB is the parameter count the tag names ("8b", "1.5b"), 0 when it
// names none.
func (r Ref) SizeB() float64 {
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
func (r Ref) Quantization() string {
	for _, t := range r.tokens() {
		if q, ok := ggufTypes[t]; ok {
			return q
		}
	}
	if e, ok := r.libraryEntry(); ok {
		return e.quant
	}
	return DefaultQuantization
}

// DefaultQuantization is the library's default build.
const DefaultQuantization = "Q4_K_M"

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

// library are the Ollama library's models the program knows, by
// name; the first size is what the name alone (or :latest) pulls. The
// builds are those of the library's tag pages (ollama.com/library/<name>/
// tags): most default to Q4_K_M; llama3.2:1b to Q8_0, gemma2 and mistral
// to Q4_0.
var library = map[string][]libraryModel{
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
func (r Ref) libraryEntry() (libraryModel, bool) {
	sizes, ok := library[r.Model]
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
func (r Ref) CatalogModel() string {
	e, _ := r.libraryEntry()
	return e.catalog
}
