package fit

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/models"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
)

func TestWeights(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		m    Model
		want float64
	}{
		{Model{ParametersB: 7, Dtype: "float16"}, 14},
		{Model{ParametersB: 70, Dtype: "bfloat16"}, 140},
		{Model{ParametersB: 70, Dtype: "auto", Quantization: "fp8"}, 70},
		{Model{ParametersB: 8, Dtype: "auto", Quantization: "awq"}, 4},
		{Model{ParametersB: 8, Dtype: "auto", Quantization: "compressed-tensors"}, 8},
		{Model{ParametersB: 7, Dtype: "float32"}, 28},
		{Model{ParametersB: 7, Dtype: "auto"}, 14},
		{Model{ParametersB: 8, WeightsGB: 20, Dtype: "bfloat16"}, 20},
	} {
		if got := tc.m.Weights(); got != tc.want {
			t.Errorf("%+v: %v GB, want %v", tc.m, got, tc.want)
		}
	}
}

// known is a catalog model as the fit check sees it, served in bfloat16
// at 8192 tokens with gpuMemoryUtilization 0.9 and one replica.
func known(t *testing.T, name string, tp int) Model {
	t.Helper()
	k, ok := models.Known.Lookup(name)
	if !ok {
		t.Fatalf("no catalog model %s", name)
	}
	return Model{Name: name, ParametersB: k.ParametersB, Dtype: "bfloat16", TensorParallel: tp, GPUMemoryUtilization: 0.9,
		MaxReplicas: 1, MaxModelLen: 8192, Shape: k.Shape, Set: Keys{TensorParallel: true, MaxModelLen: true}}
}

func with(m Model, f func(*Model)) Model { f(&m); return m }

// theModel is a case's field for a problem reported against the model.
const theModel = "(the model)"

// The fit check's verdicts and advice. The cases of the check it replaced
// (a KV reserve of 10 % of the weights) are kept, with the exact figures.
func TestFit(t *testing.T) {
	t.Parallel()
	h100x8 := func(maxNodes int) gpupool.Facts {
		return pooltest.Pool(t, pooltest.Natron, "h100-80gb-x8", maxNodes, "")
	}
	a100x1 := pooltest.Pool(t, pooltest.AKS, "Standard_NC24ads_A100_v4", 4, "")
	nvl2 := pooltest.Pool(t, pooltest.AKS, "Standard_NC80adis_H100_v5", 2, "")
	azure := aks.Sizes.SKUs()
	tests := []struct {
		name   string
		m      Model
		pool   gpupool.Facts
		others []catalog.SKU
		field  string
		want   string // "" = fits
	}{
		{"8B on one A100", known(t, "llama-3.1-8b", 1), a100x1, nil, "", ""},
		{"70B on one GPU", known(t, "llama-3.1-70b", 1), h100x8(2), nil, "tensorParallel",
			"llama-3.1-70b at maxModelLen 8192 needs 138 GiB (132 GiB of weights, 2.5 GiB of KV cache, 4.3 GiB for the runtime); tensorParallel 1 on pool infer gives 1 × 79 GiB × gpuMemoryUtilization 0.90 = 71 GiB; tensorParallel 4 fits, got 1"},
		{"70B across 2 H100: the runtime tips it over", known(t, "llama-3.1-70b", 2), h100x8(2), nil, "tensorParallel",
			"needs 146 GiB (132 GiB of weights, 2.5 GiB of KV cache, 12.2 GiB for the runtime); tensorParallel 2 on pool infer gives 2 × 79 GiB × gpuMemoryUtilization 0.90 = 143 GiB; tensorParallel 4 fits"},
		{"70B across 4 H100", known(t, "llama-3.1-70b", 4), h100x8(2), nil, "", ""},
		{"70B too big for a one-GPU size: another size is named", known(t, "llama-3.1-70b", 1), a100x1, azure, "tensorParallel",
			"tensorParallel 2 on Standard_NC80adis_H100_v5 fits, got 1"},
		{"70B at its native 128k context: the KV cache does not fit two H100 NVL", with(known(t, "llama-3.1-70b", 2), func(m *Model) { m.MaxModelLen = 131072 }), nvl2, azure, "maxModelLen",
			"needs 184 GiB (132 GiB of weights, 40.0 GiB of KV cache, 12.2 GiB for the runtime); tensorParallel 2 on pool infer gives 2 × 93 GiB × gpuMemoryUtilization 0.90 = 168 GiB; quantization fp8 (FP8 weights and compute, online from a 16-bit checkpoint or an FP8 checkpoint: Ada (8.9) or Hopper (9.0) GPUs) at tensorParallel 2, or maxModelLen 78544 or less at tensorParallel 2, or tensorParallel 2 on Standard_ND96isr_H200_v5 fits, got 131072"},
		{"8B: 8 concurrent sequences of 128k", with(known(t, "llama-3.1-8b", 1), func(m *Model) { m.MaxModelLen, m.Concurrency = 131072, 8 }), a100x1, nil, "maxModelLen",
			"at maxModelLen 131072 × concurrency 8 needs 146 GiB"},
		{"tensor parallel not a divisor", with(known(t, "llama-3.1-8b", 3), func(*Model) {}), h100x8(1), nil, "tensorParallel",
			"must divide the 8 GPUs of one infer node ([1 2 4 8]): a model's shards run on one node, got 3"},
		{"tensor parallel the heads do not divide", known(t, "qwen2.5-7b", 8), h100x8(1), nil, "tensorParallel",
			"vLLM refuses it: the model's 28 attention heads do not divide by 8; use one of [1 2 4], got 8"},
		{"too many replicas", with(known(t, "mistral-7b", 2), func(m *Model) { m.MaxReplicas = 9 }), h100x8(2), nil, "maxReplicas",
			"9 replicas × tensorParallel 2 = 18 GPUs, pool infer has at most 2 nodes × 8 GPUs = 16; lower maxReplicas to 8 or raise the pool's maxNodes, got 9"},
		{"fp8 on Hopper", with(known(t, "llama-3.1-70b", 2), func(m *Model) { m.Dtype, m.Quantization = "auto", "fp8" }), h100x8(1), nil, "", ""},
		{"fp8 sizes the weights: 70B fits one H100 node's 2 GPUs only quantized", known(t, "llama-3.1-70b", 2), h100x8(1), nil, "tensorParallel",
			"132 GiB of weights"},
		{"fp8 needs FP8 compute: not on an A100", with(known(t, "llama-3.1-8b", 1), func(m *Model) { m.Dtype, m.Quantization = "auto", "fp8" }), a100x1, nil, "quantization",
			"fp8 needs compute capability 8.9 or newer, the pool's NVIDIA A100 80GB PCIe has 8.0; vLLM would fall back"},
		{"an fp8 KV cache on Hopper", with(known(t, "llama-3.1-70b", 4), func(m *Model) { m.KVCacheDtype = "fp8" }), h100x8(1), nil, "", ""},
		{"an fp8 KV cache needs FlashAttention 3: not on an A100", with(known(t, "llama-3.1-8b", 1), func(m *Model) { m.KVCacheDtype = "fp8" }), a100x1, nil, "kvCacheDtype",
			"an fp8 KV cache needs compute capability 9.0 or newer (FlashAttention 3), the pool's NVIDIA A100 80GB PCIe has 8.0: vLLM refuses --kv-cache-dtype fp8 there; use auto"},
		{"awq on a T4", with(known(t, "llama-3.1-8b", 1), func(m *Model) { m.Dtype, m.Quantization = "auto", "awq" }),
			pooltest.Pool(t, pooltest.AKS, "Standard_NC4as_T4_v3", 1, ""), nil, "", ""},
		{"awq not on a V100", with(known(t, "llama-3.1-8b", 1), func(m *Model) { m.Dtype, m.Quantization = "auto", "awq" }),
			pooltest.Pool(t, pooltest.AKS, "Standard_NC6s_v3", 1, ""), nil, "quantization", "awq needs compute capability 7.5 or newer"},
		{"no tensor parallelism over MIG slices", known(t, "mistral-7b", 2),
			pooltest.Pool(t, pooltest.Natron, "a100-80gb-x8", 1, "MIG3g"), nil, "tensorParallel", "must be 1 on pool infer, where each GPU resource is a MIG slice (3g.40gb): a CUDA process sees one MIG device"},
		{"no tensor parallelism over time-sliced shares", known(t, "llama-3.2-1b", 2),
			pooltest.TimeSliced(t, 4), nil, "tensorParallel", "a time-sliced share (4 per GPU): two shares may be the same physical GPU"},
		{"MIG slice memory counts", known(t, "mistral-7b", 1),
			pooltest.Pool(t, pooltest.Natron, "a100-80gb-x8", 1, "MIG1g"), nil, "tensorParallel", "tensorParallel 1 on pool infer gives 1 × 9 GiB × gpuMemoryUtilization 0.90 = 8 GiB"},
		{"a 1B model on a MIG 1g slice", known(t, "llama-3.2-1b", 1), pooltest.Pool(t, pooltest.Natron, "a100-80gb-x8", 1, "MIG1g"), nil, "", ""},
		{"no room for CUDA graphs above the budget", with(known(t, "llama-3.2-1b", 1), func(m *Model) { m.GPUMemoryUtilization = 0.98 }),
			pooltest.Pool(t, pooltest.Natron, "a100-80gb-x8", 1, "MIG1g"), nil, "gpuMemoryUtilization", "leaves 0.18 GiB of each GPU above vLLM's budget"},
		{"a model given by size only: the nearest catalog shape", Model{Name: "m", ParametersB: 7, Dtype: "float16", TensorParallel: 1, GPUMemoryUtilization: 0.9, MaxReplicas: 1, MaxModelLen: 65536, Set: Keys{MaxModelLen: true}},
			pooltest.Pool(t, pooltest.AKS, "Standard_NV36ads_A10_v5", 1, ""), nil, "maxModelLen", "8.0 GiB of KV cache"},
		// no size key written: the model itself, and every way it would fit
		{"405B fits nowhere: reported against the model", with(known(t, "llama-3.1-405b", 8), func(m *Model) { m.Set = Keys{} }), h100x8(1), azure, theModel,
			`does not fit pool infer at any tensorParallel [1 2 4 8]: llama-3.1-405b at maxModelLen 8192 needs 829 GiB (756 GiB of weights`},
		{"405B: quantized, or on another size, it fits", with(known(t, "llama-3.1-405b", 8), func(m *Model) { m.Set = Keys{} }), h100x8(1), azure, theModel,
			"what fits: quantization fp8 (FP8 weights and compute, online from a 16-bit checkpoint or an FP8 checkpoint: Ada (8.9) or Hopper (9.0) GPUs) at tensorParallel 8, or tensorParallel 8 on Standard_ND96isr_H200_v5 fits"},
		{"64 streams of 128k on one A100: fewer streams or a shorter context", with(known(t, "llama-3.1-8b", 1), func(m *Model) {
			m.MaxModelLen, m.Concurrency, m.Set = 131072, 64, Keys{}
		}), a100x1, azure, theModel,
			"what fits: maxModelLen 6861 or less at tensorParallel 1, or concurrency 3 or less (concurrent streams of maxModelLen per replica; more replicas serve more) at tensorParallel 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Fit(field.NewPath("model"), tc.m, tc.pool, tc.others...)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("should fit, got %+v", got)
				}
				return
			}
			want := "model." + tc.field
			if tc.field == theModel {
				want = "model"
			}
			if len(got) != 1 || got[0].Field != want || !strings.Contains(got[0].Detail, tc.want) {
				t.Fatalf("got %+v, want %s: ...%s", got, tc.field, tc.want)
			}
		})
	}
}

func TestStartupBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		weightsGB, mbps float64
		want            int
	}{
		{14, 1000, 1800},  // small model, fast storage: KAITO's 30-minute floor
		{140, 1000, 3247}, // 70B: KAITO's 15 min + 18 s/GiB is the larger
		{140, 100, 3700},  // slow storage: ours, 15 min + 2 × 1400 s
		{1000, 10, 21600}, // absurd: capped at 6 hours
	} {
		if got := StartupBudgetSeconds(tc.weightsGB, tc.mbps); got != tc.want {
			t.Errorf("StartupBudgetSeconds(%v GB, %v MB/s) = %d, want %d", tc.weightsGB, tc.mbps, got, tc.want)
		}
	}
}

// An fp8 KV cache is one byte per element: half the bytes per token of a
// 16-bit model, so about twice the tokens in the same memory; and 8 streams
// of 128k that do not fit one H100 in 16-bit do in fp8.
func TestFP8KVCacheHalvesIt(t *testing.T) {
	t.Parallel()
	h100 := pooltest.Pool(t, pooltest.Natron, "h100-80gb-x8", 1, "")
	auto := with(known(t, "llama-3.1-8b", 1), func(m *Model) { m.MaxModelLen, m.Concurrency = 131072, 4 })
	fp8 := with(auto, func(m *Model) { m.KVCacheDtype = "fp8" })
	a, f := Sizing(auto, h100, 1), Sizing(fp8, h100, 1)
	if a.KVBytesPerToken != 2*f.KVBytesPerToken || a.KVBytesPerToken != 131072 {
		t.Errorf("KV bytes per token: auto %d, fp8 %d", a.KVBytesPerToken, f.KVBytesPerToken)
	}
	if r := float64(f.KVTokens()) / float64(a.KVTokens()); r < 1.99 || r > 2.01 {
		t.Errorf("fp8 holds %.2f× the tokens", r)
	}
	if len(Fit(nil, auto, h100)) == 0 || len(Fit(nil, fp8, h100)) != 0 {
		t.Errorf("4 × 128k of 8B on one H100: auto %v, fp8 %v", Fit(nil, auto, h100), Fit(nil, fp8, h100))
	}
}
