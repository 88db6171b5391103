package models

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The parameters a config.json gives, against an independent counter:
// verl's FlopsCounter, whose test (volcengine/verl,
// tests/utils/test_flops_counter.py) states the training FLOPs of five
// published configs as 6 × the parameters a token passes through × the
// tokens, plus attention's 12 × Σ seq² × layers × heads × head dim. The
// configs and figures are that test's.
func TestParametersAgainstVerl(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config string
		headDim      int
		seqs         []int
		flops        float64
	}{
		{"llama2-7B", `{"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32}`,
			128, []int{512, 1024, 2048}, 153555818250240},
		{"Qwen2.5-7B-Instruct", `{"model_type": "qwen2", "vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4}`,
			128, []int{4096, 4096, 4096}, 622070178250752},
		{"Qwen3-8B", `{"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128}`,
			128, []int{512, 1024, 2048}, 185867930959872},
		{"Qwen3-30B-A3B-Base", `{"model_type": "qwen3_moe", "hidden_size": 2048, "vocab_size": 151936, "num_hidden_layers": 48, "num_key_value_heads": 4, "num_attention_heads": 32, "head_dim": 128, "moe_intermediate_size": 768, "num_experts_per_tok": 8, "num_experts": 128}`,
			128, []int{4096, 4096, 4096}, 365944098521088},
		{"DeepSeek-Prover-V2-671B", `{"model_type": "deepseek_v3", "hidden_size": 7168, "vocab_size": 129280, "moe_intermediate_size": 2048, "num_hidden_layers": 61, "first_k_dense_replace": 3, "num_attention_heads": 128, "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "v_head_dim": 128, "intermediate_size": 18432, "qk_nope_head_dim": 128, "q_lora_rank": 1536}`,
			192, []int{512, 1024, 2048}, 906535995703296},
	} {
		card, err := FromConfig([]byte(tc.config))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var tokens, squares float64
		for _, s := range tc.seqs {
			tokens += float64(s)
			squares += float64(s) * float64(s)
		}
		got := 6*card.ActiveParametersB*1e9*tokens + 12*squares*float64(card.Layers*card.AttentionHeads*tc.headDim)
		if math.Abs(got/tc.flops-1) > 1e-9 {
			t.Errorf("%s: %.6g FLOPs from %.4gB active parameters, verl %.6g", tc.name, got, card.ActiveParametersB, tc.flops)
		}
	}
}

// The catalog's published sizes, from the models' own config.json files
// (testdata, as their Hugging Face repositories publish them): within 2 % of
// the parameters the catalog lists, the MoE's active ones too (DeepSeek
// publishes 37B active, rounded; the config gives 37.5B), and the
// same KV shape and context.
func TestConfigFilesAgainstTheCatalog(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"llama-3.1-8b", "mixtral-8x7b", "deepseek-v3"} {
		want, _ := Known.Lookup(name)
		got, err := FromConfigFile(filepath.Join("testdata", name, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.ParametersB/want.ParametersB-1) > 0.01 || math.Abs(got.ActiveParametersB/want.ActiveParametersB-1) > 0.02 {
			t.Errorf("%s: %.2fB (%.2fB active), catalog %.2fB (%.2fB)", name, got.ParametersB, got.ActiveParametersB, want.ParametersB, want.ActiveParametersB)
		}
		if got.Shape != want.Shape || got.Embedding != want.Embedding || got.NativeContext != want.NativeContext || got.Quantization != want.Quantization ||
			got.Experts != want.Experts || got.ExpertsPerToken != want.ExpertsPerToken || got.Name != name {
			t.Errorf("%s: %+v, catalog %+v", name, got, want)
		}
	}
}

// A config the sizing does not understand is refused, naming what it
// understands; a file that is no config is named.
func TestConfigRefusals(t *testing.T) {
	t.Parallel()
	if _, err := FromConfig([]byte(`{"model_type": "mamba", "architectures": ["MambaForCausalLM"]}`)); err == nil ||
		!strings.Contains(err.Error(), `model_type "mamba" (architectures [MambaForCausalLM]) is not understood; understood: llama, mistral, qwen2, qwen3, mixtral, qwen3_moe, deepseek_v3`) {
		t.Errorf("mamba: %v", err)
	}
	if _, err := FromConfig([]byte(`{"architectures": ["LlamaForCausalLM"], "hidden_size": 0}`)); err == nil || !strings.Contains(err.Error(), "must all be > 0") {
		t.Errorf("an empty llama: %v", err)
	}
	if _, err := FromConfig([]byte(`not json`)); err == nil || !strings.Contains(err.Error(), "not a config.json") {
		t.Errorf("not json: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FromConfigFile(filepath.Join(dir, "config.json")); err == nil || !strings.HasPrefix(err.Error(), dir) {
		t.Errorf("an empty file: %v", err)
	}
}

// --model takes a catalog name, a config.json or the directory holding
// one; anything else is named with what it may be.
func TestResolve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, name, err string }{
		{"llama-3.1-8b", "llama-3.1-8b", ""},
		{"mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b", ""},
		{filepath.Join("testdata", "deepseek-v3", "config.json"), "deepseek-v3", ""},
		{filepath.Join("testdata", "mixtral-8x7b"), "mixtral-8x7b", ""},
		{"gpt-5", "", `"gpt-5" is neither a catalog model (`},
		{filepath.Join("testdata", "none.json"), "", "no such file"},
	} {
		c, err := Resolve(tc.in)
		if (err != nil) != (tc.err != "") || (err != nil && !strings.Contains(err.Error(), tc.err)) || c.Name != tc.name {
			t.Errorf("%s: %q, %v", tc.in, c.Name, err)
		}
	}
}
