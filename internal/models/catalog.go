package models

// hf is where a model's config.json is published.
func hf(id string) string { return "https://huggingface.co/" + id + "/blob/main/config.json" }

// gqa is a GQA shape: layers, attention heads, KV heads, head dim, hidden size.
func gqa(layers, heads, kvHeads, headDim, hidden int) Shape {
	return Shape{Layers: layers, AttentionHeads: heads, KVHeads: kvHeads, HeadDim: headDim, HiddenSize: hidden, Attention: GQA}
}

// dense is a model whose every parameter is active.
func dense(name, id string, params float64, s Shape, context int, e Embedding, aliases ...string) Card {
	return Card{Name: name, HuggingFace: id, Aliases: aliases, ParametersB: params, ActiveParametersB: params,
		Shape: s, NativeContext: context, Embedding: e, Source: hf(id)}
}

// vocab is an embedding table: vocab_size and tie_word_embeddings.
func vocab(size int, tied bool) Embedding { return Embedding{VocabSize: size, Tied: tied} }

// Known are the models the program sizes without being told their shape.
// Every figure is the named field of the model's config.json (Source);
// parameter counts are the ones Hugging Face lists for the safetensors
// weights. Gemma 2's sliding-window layers are counted as full layers: its
// KV need is overstated, never understated.
var Known = Catalog{
	dense("llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", 8.03, gqa(32, 32, 8, 128, 4096), 131072, vocab(128256, false), "llama3.1-8b", "meta-llama/Meta-Llama-3.1-8B-Instruct"),
	dense("llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct", 70.6, gqa(80, 64, 8, 128, 8192), 131072, vocab(128256, false), "llama3.1-70b", "meta-llama/Meta-Llama-3.1-70B-Instruct"),
	dense("llama-3.1-405b", "meta-llama/Llama-3.1-405B-Instruct", 406, gqa(126, 128, 8, 128, 16384), 131072, vocab(128256, false), "llama3.1-405b", "meta-llama/Meta-Llama-3.1-405B-Instruct"),
	dense("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct", 70.6, gqa(80, 64, 8, 128, 8192), 131072, vocab(128256, false), "llama3.3-70b"),
	dense("llama-3.2-1b", "meta-llama/Llama-3.2-1B-Instruct", 1.24, gqa(16, 32, 8, 64, 2048), 131072, vocab(128256, true), "llama3.2-1b"),
	dense("llama-3.2-3b", "meta-llama/Llama-3.2-3B-Instruct", 3.21, gqa(28, 24, 8, 128, 3072), 131072, vocab(128256, true), "llama3.2-3b"),
	dense("mistral-7b", "mistralai/Mistral-7B-Instruct-v0.3", 7.25, gqa(32, 32, 8, 128, 4096), 32768, vocab(32768, false), "mistral-7b-v0.3"),
	{Name: "mixtral-8x7b", HuggingFace: "mistralai/Mixtral-8x7B-Instruct-v0.1", ParametersB: 46.7, ActiveParametersB: 12.9, Experts: 8, ExpertsPerToken: 2,
		Shape: gqa(32, 32, 8, 128, 4096), NativeContext: 32768, Embedding: vocab(32000, false), Source: hf("mistralai/Mixtral-8x7B-Instruct-v0.1")},
	// DBRX: 16 experts, 4 per token (ffn_config.moe_num_experts and
	// moe_top_k); d_model, n_heads, n_layers and attn_config.kv_n_heads
	// in its config's own names.
	{Name: "dbrx", HuggingFace: "databricks/dbrx-instruct", ParametersB: 132, ActiveParametersB: 36, Experts: 16, ExpertsPerToken: 4,
		Shape: gqa(40, 48, 8, 128, 6144), NativeContext: 32768, Embedding: vocab(100352, false), Source: hf("databricks/dbrx-instruct"), Aliases: []string{"dbrx-instruct"}},
	dense("qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct", 7.62, gqa(28, 28, 4, 128, 3584), 32768, vocab(152064, false)),
	dense("qwen2.5-14b", "Qwen/Qwen2.5-14B-Instruct", 14.8, gqa(48, 40, 8, 128, 5120), 32768, vocab(152064, false)),
	dense("qwen2.5-32b", "Qwen/Qwen2.5-32B-Instruct", 32.8, gqa(64, 40, 8, 128, 5120), 32768, vocab(152064, false)),
	dense("qwen2.5-72b", "Qwen/Qwen2.5-72B-Instruct", 72.7, gqa(80, 64, 8, 128, 8192), 32768, vocab(152064, false)),
	dense("qwen3-8b", "Qwen/Qwen3-8B", 8.19, gqa(36, 32, 8, 128, 4096), 40960, vocab(151936, false)),
	dense("qwen3-14b", "Qwen/Qwen3-14B", 14.8, gqa(40, 40, 8, 128, 5120), 40960, vocab(151936, false)),
	dense("qwen3-32b", "Qwen/Qwen3-32B", 32.8, gqa(64, 64, 8, 128, 5120), 40960, vocab(151936, false)),
	dense("gemma-2-9b", "google/gemma-2-9b-it", 9.24, gqa(42, 16, 8, 256, 3584), 8192, vocab(256000, true)),
	dense("gemma-2-27b", "google/gemma-2-27b-it", 27.2, gqa(46, 32, 16, 128, 4608), 8192, vocab(256000, true)),
	dense("deepseek-r1-distill-llama-70b", "deepseek-ai/DeepSeek-R1-Distill-Llama-70B", 70.6, gqa(80, 64, 8, 128, 8192), 131072, vocab(128256, false)),
	// MLA, and an FP8 checkpoint: vLLM reads its quantization_config.
	{Name: "deepseek-v3", HuggingFace: "deepseek-ai/DeepSeek-V3", ParametersB: 671, ActiveParametersB: 37, Experts: 256, ExpertsPerToken: 8,
		Shape:         Shape{Layers: 61, AttentionHeads: 128, HiddenSize: 7168, Attention: MLA, KVLoraRank: 512, RopeHeadDim: 64},
		NativeContext: 163840, Quantization: "fp8", Embedding: vocab(129280, false), Source: hf("deepseek-ai/DeepSeek-V3")},
}
