// Package models is the one place that knows language models: their names,
// sizes and attention shapes, each number from the model's published
// config.json, and the KV-cache arithmetic that follows from a shape.
//
// To add a model, add one entry to Catalog (catalog.go) with the fields of
// its config.json and the URL they came from; TestCatalog checks it.
package models

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Attention is how a model stores its keys and values.
type Attention string

const (
	// GQA is grouped-query attention (multi-head and multi-query attention
	// are its edge cases): each layer keeps KVHeads keys and values of
	// HeadDim per token, which tensor parallelism splits across ranks.
	GQA Attention = "gqa"
	// MLA is multi-head latent attention (DeepSeek V2/V3): each layer keeps
	// one compressed latent of KVLoraRank plus a rotary key of RopeHeadDim
	// per token, the same on every tensor-parallel rank.
	MLA Attention = "mla"
)

// Attentions lists the attention types.
var Attentions = []Attention{GQA, MLA}

// Shape is what sizes a model's memory: its config.json fields.
type Shape struct {
	// Layers is num_hidden_layers.
	Layers int `json:"layers,omitempty"`
	// AttentionHeads is num_attention_heads: tensor parallelism must divide
	// it.
	AttentionHeads int `json:"attentionHeads,omitempty"`
	// KVHeads is num_key_value_heads (GQA).
	KVHeads int `json:"kvHeads,omitempty"`
	// HeadDim is head_dim, or hidden_size / num_attention_heads where the
	// config has none (GQA).
	HeadDim int `json:"headDim,omitempty"`
	// HiddenSize is hidden_size: the activations grow with it.
	HiddenSize int `json:"hiddenSize,omitempty"`
	// Attention is gqa or mla.
	// Default: gqa.
	Attention Attention `json:"attention,omitempty"`
	// KVLoraRank is kv_lora_rank (MLA).
	KVLoraRank int `json:"kvLoraRank,omitempty"`
	// RopeHeadDim is qk_rope_head_dim (MLA).
	RopeHeadDim int `json:"ropeHeadDim,omitempty"`
}

// IsZero reports whether no field of the shape is given.
func (s Shape) IsZero() bool { return s == Shape{} }

// Kind is the attention type, gqa when unset.
func (s Shape) Kind() Attention {
	if s.Attention == "" {
		return GQA
	}
	return s.Attention
}

// KVBytesPerToken is the KV cache of one token over all layers on one
// model instance: 2 (a key and a value) × layers × kvHeads × headDim ×
// kvBytes for GQA (Llama 3.1 70B in BF16: 327,680 bytes), layers ×
// (kvLoraRank + ropeHeadDim) × kvBytes for MLA (DeepSeek V3: 70,272).
func (s Shape) KVBytesPerToken(kvBytes int) int {
	if s.Kind() == MLA {
		return s.Layers * (s.KVLoraRank + s.RopeHeadDim) * kvBytes
	}
	return 2 * s.Layers * s.KVHeads * s.HeadDim * kvBytes
}

// KVBytesPerTokenPerGPU is one tensor-parallel rank's share of a token's
// KV cache. vLLM's QKVParallelLinear gives each rank kvHeads / tp heads,
// and one replicated head where kvHeads < tp
// (vllm/model_executor/layers/linear.py at v0.11.0); MLA's latent is not
// split at all (vllm/attention/backends/mla: one latent per rank).
func (s Shape) KVBytesPerTokenPerGPU(tp, kvBytes int) int {
	if s.Kind() == MLA || tp <= 1 {
		return s.KVBytesPerToken(kvBytes)
	}
	perRank := max(s.KVHeads/tp, 1)
	return 2 * s.Layers * perRank * s.HeadDim * kvBytes
}

// TensorParallelProblem is why vLLM refuses a tensor-parallel size for
// the shape, "" when it takes it: the attention heads must divide evenly
// (ModelConfig.verify_with_parallel_config, vllm/config/model.py at
// v0.11.0), and for GQA the KV heads must divide by tp or tp by them
// (QKVParallelLinear's divide(), vllm/model_executor/layers/linear.py).
func (s Shape) TensorParallelProblem(tp int) string {
	if s.AttentionHeads > 0 && s.AttentionHeads%tp != 0 {
		return fmt.Sprintf("the model's %d attention heads do not divide by %d", s.AttentionHeads, tp)
	}
	if s.Kind() == GQA && s.KVHeads > 0 && s.KVHeads%tp != 0 && tp%s.KVHeads != 0 {
		return fmt.Sprintf("the model's %d KV heads and %d do not divide", s.KVHeads, tp)
	}
	return ""
}

// Card is one catalog entry.
type Card struct {
	// Name is the short name a stack writes (model: llama-3.1-70b).
	Name string
	// HuggingFace is the Hugging Face repository id.
	HuggingFace string
	// Aliases are other names people use for it.
	Aliases []string
	// ParametersB is billions of parameters; ActiveParametersB those one
	// token passes through (MoE; equal to ParametersB for dense models).
	ParametersB, ActiveParametersB float64
	// Experts and ExpertsPerToken are a mixture of experts' routed experts
	// per layer and how many each token takes (num_local_experts or
	// n_routed_experts, num_experts_per_tok); 0 for a dense model.
	Experts, ExpertsPerToken int
	Shape
	// Embedding is the token embedding table; zero where unknown.
	Embedding
	// NativeContext is max_position_embeddings: the longest context the
	// model was built for.
	NativeContext int
	// Quantization is the checkpoint's own quantization ("" for a 16-bit
	// checkpoint): vLLM reads it from the config's quantization_config.
	Quantization string
	// Source is the config.json the numbers come from.
	Source string
}

// Embedding is a model's token embedding table: vocab_size rows of
// hidden_size, and whether the output head is the same matrix
// (tie_word_embeddings).
type Embedding struct {
	VocabSize int
	Tied      bool
}

// GatheredB is the part of the parameters (billions) a forward pass only
// gathers rows of rather than reads or multiplies: the input embedding
// table when the output head is a matrix of its own. Tied, the table is
// the head, read whole every step; unknown, nothing is assumed.
func (c Card) GatheredB() float64 {
	if c.Tied || c.VocabSize <= 0 {
		return 0
	}
	return float64(c.VocabSize) * float64(c.HiddenSize) / 1e9
}

// Catalog holds the models; Lookup finds one by any of its names.
type Catalog []Card

// Lookup finds a model by its short name, Hugging Face id or an alias,
// ignoring case.
func (c Catalog) Lookup(name string) (Card, bool) {
	for _, m := range c {
		if strings.EqualFold(m.Name, name) || strings.EqualFold(m.HuggingFace, name) ||
			slices.ContainsFunc(m.Aliases, func(a string) bool { return strings.EqualFold(a, name) }) {
			return m, true
		}
	}
	return Card{}, false
}

// Names lists the short names, for error messages.
func (c Catalog) Names() []string {
	out := make([]string, len(c))
	for i, m := range c {
		out[i] = m.Name
	}
	slices.Sort(out)
	return out
}

// Nearest is the dense GQA model whose parameter count is closest to
// parametersB (on a log scale): the stand-in shape for a model given by
// size only.
func (c Catalog) Nearest(parametersB float64) Card {
	var best Card
	bestD := math.Inf(1)
	for _, m := range c {
		if m.Kind() != GQA || m.ActiveParametersB != m.ParametersB {
			continue
		}
		if d := math.Abs(math.Log(m.ParametersB / parametersB)); d < bestD {
			best, bestD = m, d
		}
	}
	return best
}
