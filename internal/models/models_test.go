package models

import (
	"testing"
)

// KV bytes per token and native contexts against independent oracles:
// the figures the issue gives (Llama 3.1 70B: 327,680 bytes; 8B: 131,072),
// and KAITO's preset generator, which reads the same config.json files
// (kaito-project/kaito v0.12.0, presets/workspace/generator/generator_test.go:
// BytesPerToken and ModelTokenLimit of qwen3-8b, mistral-7b-v0.3 and
// deepseek-v3, the last with MLA).
func TestCatalogAgainstPublishedFigures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model         string
		bytesPerToken int
		context       int
	}{
		{"llama-3.1-70b", 327680, 131072},
		{"llama-3.1-8b", 131072, 131072},
		{"qwen3-8b", 147456, 40960},
		{"mistral-7b-v0.3", 131072, 32768},
		{"deepseek-v3", 70272, 163840},
	} {
		m, ok := Known.Lookup(tc.model)
		if !ok {
			t.Errorf("%s: not in the catalog", tc.model)
			continue
		}
		if got := m.KVBytesPerToken(2); got != tc.bytesPerToken {
			t.Errorf("%s: %d KV bytes per token in BF16, want %d", tc.model, got, tc.bytesPerToken)
		}
		if m.NativeContext != tc.context {
			t.Errorf("%s: native context %d, want %d", tc.model, m.NativeContext, tc.context)
		}
	}
	// "Llama 3 70B at 128k tokens needs about 40 GiB of KV cache for one
	// sequence"
	m, _ := Known.Lookup("llama-3.1-70b")
	if gib := float64(m.KVBytesPerToken(2)) * 131072 / (1 << 30); gib != 40 {
		t.Errorf("Llama 3.1 70B at 128k: %.2f GiB of KV, want 40", gib)
	}
}

// Tensor parallelism splits GQA's KV heads across ranks, replicates one
// head per rank where there are fewer heads than ranks, and leaves MLA's
// latent whole; vLLM refuses a size the heads do not divide.
func TestKVAcrossTensorParallelRanks(t *testing.T) {
	t.Parallel()
	lookup := func(name string) Card {
		m, ok := Known.Lookup(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		return m
	}
	for _, tc := range []struct {
		model   string
		tp      int
		perGPU  int
		problem string
	}{
		{"llama-3.1-70b", 4, 327680 / 4, ""},
		{"llama-3.1-70b", 8, 327680 / 8, ""},
		{"qwen2.5-7b", 4, 2 * 28 * 1 * 128 * 2, ""},
		{"qwen2.5-7b", 8, 2 * 28 * 1 * 128 * 2, "the model's 28 attention heads do not divide by 8"},
		{"deepseek-v3", 8, 70272, ""},
		{"gemma-2-27b", 8, 2 * 46 * 2 * 128 * 2, ""},
		{"llama-3.2-3b", 8, 2 * 28 * 1 * 128 * 2, ""},
	} {
		m := lookup(tc.model)
		if got := m.KVBytesPerTokenPerGPU(tc.tp, 2); got != tc.perGPU {
			t.Errorf("%s at tp %d: %d bytes per token per GPU, want %d", tc.model, tc.tp, got, tc.perGPU)
		}
		if got := m.TensorParallelProblem(tc.tp); got != tc.problem {
			t.Errorf("%s at tp %d: problem %q, want %q", tc.model, tc.tp, got, tc.problem)
		}
	}
}

// Every entry is complete and consistent, and each of its names finds it
// and no other.
func TestCatalogEntries(t *testing.T) {
	t.Parallel()
	required := []string{"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.3-70b", "llama-3.2-1b", "llama-3.2-3b",
		"mistral-7b", "mixtral-8x7b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b", "qwen3-8b", "qwen3-32b",
		"gemma-2-9b", "gemma-2-27b", "deepseek-r1-distill-llama-70b"}
	for _, name := range required {
		if _, ok := Known.Lookup(name); !ok {
			t.Errorf("%s: missing from the catalog", name)
		}
	}
	seen := map[string]string{}
	for _, m := range Known {
		for _, n := range append([]string{m.Name, m.HuggingFace}, m.Aliases...) {
			if other, dup := seen[n]; dup {
				t.Errorf("name %s is both %s and %s", n, other, m.Name)
			}
			seen[n] = m.Name
			if got, _ := Known.Lookup(n); got.Name != m.Name {
				t.Errorf("Lookup(%s) = %s, want %s", n, got.Name, m.Name)
			}
		}
		switch {
		case m.Layers <= 0 || m.AttentionHeads <= 0 || m.HiddenSize <= 0 || m.NativeContext <= 0:
			t.Errorf("%s: incomplete: %+v", m.Name, m)
		case m.Kind() == GQA && (m.KVHeads <= 0 || m.HeadDim <= 0 || m.AttentionHeads%m.KVHeads != 0):
			t.Errorf("%s: GQA needs KV heads that divide the attention heads: %+v", m.Name, m.Shape)
		case m.Kind() == MLA && (m.KVLoraRank <= 0 || m.RopeHeadDim <= 0):
			t.Errorf("%s: MLA needs kvLoraRank and ropeHeadDim: %+v", m.Name, m.Shape)
		case m.ActiveParametersB <= 0 || m.ActiveParametersB > m.ParametersB:
			t.Errorf("%s: active parameters %v of %v", m.Name, m.ActiveParametersB, m.ParametersB)
		case (m.Experts > 0) != (m.ActiveParametersB < m.ParametersB) || m.ExpertsPerToken > m.Experts || (m.Experts > 0) != (m.ExpertsPerToken > 0):
			t.Errorf("%s: a mixture of experts names its experts and those per token, a dense model neither: %+v", m.Name, m)
		case m.Source != "https://huggingface.co/"+m.HuggingFace+"/blob/main/config.json":
			t.Errorf("%s: source %s", m.Name, m.Source)
		}
	}
	if _, ok := Known.Lookup("META-LLAMA/LLAMA-3.1-8B-INSTRUCT"); !ok {
		t.Error("Lookup is case-sensitive")
	}
	if _, ok := Known.Lookup("llama-4"); ok {
		t.Error("an unknown name was found")
	}
}

// A model given by size only borrows the shape of the dense GQA model
// nearest in size, never an MoE or MLA one.
func TestNearest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		b    float64
		want string
	}{{8, "llama-3.1-8b"}, {7, "mistral-7b"}, {70, "llama-3.1-70b"}, {45, "qwen2.5-32b"}, {600, "llama-3.1-405b"}, {1, "llama-3.2-1b"}} {
		if got := Known.Nearest(tc.b).Name; got != tc.want {
			t.Errorf("Nearest(%v) = %s, want %s", tc.b, got, tc.want)
		}
	}
}
