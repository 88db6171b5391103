package models

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// hfConfig is the part of a Hugging Face config.json that sizes a model.
type hfConfig struct {
	Architectures         []string `json:"architectures"`
	ModelType             string   `json:"model_type"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	Layers                int      `json:"num_hidden_layers"`
	Heads                 int      `json:"num_attention_heads"`
	KVHeads               *int     `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	// mixture of experts: Mixtral's num_local_experts, Qwen3-MoE's
	// num_experts, DeepSeek's n_routed_experts
	LocalExperts        int `json:"num_local_experts"`
	NumExperts          int `json:"num_experts"`
	RoutedExperts       int `json:"n_routed_experts"`
	ExpertsPerToken     int `json:"num_experts_per_tok"`
	MoEIntermediateSize int `json:"moe_intermediate_size"`
	SharedExperts       int `json:"n_shared_experts"`
	FirstKDenseReplace  int `json:"first_k_dense_replace"`
	// multi-head latent attention (DeepSeek V2/V3)
	QLoraRank     int `json:"q_lora_rank"`
	KVLoraRank    int `json:"kv_lora_rank"`
	QKNopeHeadDim int `json:"qk_nope_head_dim"`
	QKRopeHeadDim int `json:"qk_rope_head_dim"`
	VHeadDim      int `json:"v_head_dim"`

	QuantizationConfig *struct {
		QuantMethod string `json:"quant_method"`
	} `json:"quantization_config"`
}

// The model types the sizing understands, by the config's model_type:
// dense GQA transformers, GQA mixtures of experts, and DeepSeek V3's
// MLA mixture. Their architectures name them where model_type is absent.
var (
	denseTypes = []string{"llama", "mistral", "qwen2", "qwen3"}
	moeTypes   = []string{"mixtral", "qwen3_moe"}
	mlaTypes   = []string{"deepseek_v3"}
	byArch     = map[string]string{
		"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3",
		"MixtralForCausalLM": "mixtral", "Qwen3MoeForCausalLM": "qwen3_moe", "DeepseekV3ForCausalLM": "deepseek_v3",
	}
)

// UnderstoodTypes lists the model types FromConfig sizes.
func UnderstoodTypes() []string { return slices.Concat(denseTypes, moeTypes, mlaTypes) }

// FromConfigFile sizes the model whose Hugging Face config.json is at
// path (the catalog's card for a model outside the catalog).
func FromConfigFile(path string) (Card, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Card{}, err
	}
	c, err := FromConfig(b)
	if err != nil {
		return Card{}, fmt.Errorf("%s: %w", path, err)
	}
	c.Name, c.Source = filepath.Base(filepath.Dir(path)), path
	if c.Name == "." || c.Name == "/" {
		c.Name = strings.TrimSuffix(filepath.Base(path), ".json")
	}
	return c, nil
}

// FromConfig sizes a model from its config.json: the parameters it
// computes from the shape (matrices only: embeddings, attention, MLPs or
// experts and routers, the output head unless tied; norms and biases are
// under 0.1 %), those one token passes through, the attention shape that
// sizes its KV cache, its native context and checkpoint quantization.
func FromConfig(b []byte) (Card, error) {
	var c hfConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return Card{}, fmt.Errorf("not a config.json: %w", err)
	}
	kind := c.ModelType
	if kind == "" && len(c.Architectures) > 0 {
		kind = byArch[c.Architectures[0]]
	}
	if !slices.Contains(UnderstoodTypes(), kind) {
		return Card{}, fmt.Errorf("model_type %q (architectures %v) is not understood; understood: %s", c.ModelType, c.Architectures, strings.Join(UnderstoodTypes(), ", "))
	}
	if c.HiddenSize <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.VocabSize <= 0 {
		return Card{}, fmt.Errorf("hidden_size, num_hidden_layers, num_attention_heads and vocab_size must all be > 0")
	}
	total, active := c.parameters(kind)
	card := Card{ParametersB: total / 1e9, ActiveParametersB: active / 1e9, NativeContext: c.MaxPositionEmbeddings, Shape: c.shape(kind),
		Embedding: Embedding{VocabSize: c.VocabSize, Tied: c.TieWordEmbeddings}}
	if slices.Contains(moeTypes, kind) || slices.Contains(mlaTypes, kind) {
		card.Experts, card.ExpertsPerToken = c.experts(), c.ExpertsPerToken
	}
	if q := c.QuantizationConfig; q != nil {
		card.Quantization = q.QuantMethod
	}
	return card, nil
}

func (c hfConfig) kvHeads() int {
	if c.KVHeads != nil {
		return *c.KVHeads
	}
	return c.Heads // multi-head attention: as many KV heads as heads
}

func (c hfConfig) headDim() int {
	if c.HeadDim > 0 {
		return c.HeadDim
	}
	return c.HiddenSize / c.Heads
}

func (c hfConfig) experts() int { return max(c.LocalExperts, c.NumExperts, c.RoutedExperts) }

func (c hfConfig) shape(kind string) Shape {
	if slices.Contains(mlaTypes, kind) {
		return Shape{Layers: c.Layers, AttentionHeads: c.Heads, HiddenSize: c.HiddenSize, Attention: MLA, KVLoraRank: c.KVLoraRank, RopeHeadDim: c.QKRopeHeadDim}
	}
	return Shape{Layers: c.Layers, AttentionHeads: c.Heads, KVHeads: c.kvHeads(), HeadDim: c.headDim(), HiddenSize: c.HiddenSize, Attention: GQA}
}

// attention is one layer's attention matrices: GQA's q, k, v and o, or
// MLA's low-rank q (or a full q without q_lora_rank), compressed kv, its
// up-projection and o.
func (c hfConfig) attention(kind string) float64 {
	h, n := float64(c.HiddenSize), float64(c.Heads)
	if slices.Contains(mlaTypes, kind) {
		qk := float64(c.QKNopeHeadDim + c.QKRopeHeadDim)
		q := h * n * qk
		if r := float64(c.QLoraRank); r > 0 {
			q = h*r + r*n*qk
		}
		kv := h*float64(c.KVLoraRank+c.QKRopeHeadDim) + float64(c.KVLoraRank)*n*float64(c.QKNopeHeadDim+c.VHeadDim)
		return q + kv + n*float64(c.VHeadDim)*h
	}
	d := float64(c.headDim())
	return h*n*d + 2*h*float64(c.kvHeads())*d + n*d*h
}

// parameters are the model's parameters and those one token passes
// through: each MoE layer's router and its experts-per-token routed
// experts plus the shared ones; DeepSeek's first first_k_dense_replace
// layers are dense.
func (c hfConfig) parameters(kind string) (total, active float64) {
	h := float64(c.HiddenSize)
	embed := float64(c.VocabSize) * h
	if !c.TieWordEmbeddings {
		embed *= 2
	}
	total, active = embed, embed
	attn, dense := c.attention(kind), 3*h*float64(c.IntermediateSize)
	moe := slices.Contains(moeTypes, kind) || slices.Contains(mlaTypes, kind)
	inter := float64(c.MoEIntermediateSize)
	if inter == 0 {
		inter = float64(c.IntermediateSize) // Mixtral: each expert is an MLP of intermediate_size
	}
	expert, e := 3*h*inter, float64(c.experts())
	for l := 0; l < c.Layers; l++ {
		total += attn
		active += attn
		if !moe || l < c.FirstKDenseReplace {
			total += dense
			active += dense
			continue
		}
		router, shared := h*e, float64(c.SharedExperts)*expert
		total += router + e*expert + shared
		active += router + float64(c.ExpertsPerToken)*expert + shared
	}
	return total, active
}

// Resolve is the model a planner's --model names: a catalog model by any
// of its names, or the path of a Hugging Face config.json (a file ending
// in .json, or a directory holding config.json) for one outside it.
func Resolve(nameOrPath string) (Card, error) {
	if c, ok := Known.Lookup(nameOrPath); ok {
		return c, nil
	}
	path := nameOrPath
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "config.json")
	}
	if strings.HasSuffix(path, ".json") {
		return FromConfigFile(path)
	}
	return Card{}, fmt.Errorf("%q is neither a catalog model (%s) nor the path of a Hugging Face config.json", nameOrPath, strings.Join(Known.Names(), ", "))
}
