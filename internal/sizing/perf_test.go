package sizing

import (
	"math"
	"testing"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/models"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// Tolerance is the accuracy the model keeps against every oracle.
const Tolerance = 0.25

func deployment(t *testing.T, model, quantization string, section catalog.Section, sku string, tp int) Deployment {
	t.Helper()
	entry, ok := models.Known.Lookup(model)
	if !ok {
		t.Fatalf("no %s", model)
	}
	s, err := section.SKU(nil, sku)
	if err != nil {
		t.Fatal(err)
	}
	m := fit.Model{ParametersB: entry.ParametersB, Dtype: "bfloat16", Quantization: quantization}
	return NewDeployment(entry, m, s, tp)
}

// The oracles: published measurements, each with its source. NVIDIA NIM's
// benchmark of Llama 3.3 70B Instruct (NIM 1.8.0, FP8, TP 2 on 2 × H100
// 80GB SXM; docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance) at
// concurrency 1: ITL 18.58 ms and TTFT 406.77 ms with 5000 input tokens,
// ITL 18.91 ms and TTFT 47.77 ms with 500 input and 2000 output tokens;
// at concurrency 5 with 5000 input tokens, ITL 21.83 ms. Llama 3.1 8B in
// BF16 on one A100 40GB streams about 75 tokens/s (issue 17's figure).
func TestPerformanceAgainstPublishedMeasurements(t *testing.T) {
	t.Parallel()
	nim := deployment(t, "llama-3.3-70b", "fp8", natron.Profiles, "h100-80gb-x8", 2)
	a100 := deployment(t, "llama-3.1-8b", "", natron.Profiles, "a100-40gb-x8", 1)
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"NIM 70B FP8 TP2, 5000 in: ITL (s)", nim.TPOT(1, 5250), 0.01858},
		{"NIM 70B FP8 TP2, 500 in / 2000 out: ITL (s)", nim.TPOT(1, 1500), 0.01891},
		{"NIM 70B FP8 TP2, 5000 in, 5 streams: ITL (s)", nim.TPOT(5, 5250), 0.02183},
		{"NIM 70B FP8 TP2, 5000 in: TTFT (s)", nim.TTFT(5000), 0.40677},
		{"NIM 70B FP8 TP2, 500 in: TTFT (s)", nim.TTFT(500), 0.04777},
		{"NIM 70B FP8 TP2: single stream (tokens/s)", nim.TokensPerSecond(1, 1500), 52},
		{"8B BF16 on an A100 40GB: single stream (tokens/s)", a100.TokensPerSecond(1, 1000), 75},
	} {
		errRel := tc.got/tc.want - 1
		t.Logf("%-52s model %8.4g, measured %8.4g: %+5.1f %%", tc.name, tc.got, tc.want, 100*errRel)
		if math.Abs(errRel) > Tolerance {
			t.Errorf("%s: %.4g, measured %.4g: %+.0f %%, beyond ±%.0f %%", tc.name, tc.got, tc.want, 100*errRel, 100*Tolerance)
		}
	}
}

// What the model must get right in direction, whatever the calibration:
// more tensor parallelism is faster per token, a longer context slower,
// a batch raises throughput, FP8 on Hopper beats BF16, and NVLink beats
// PCIe for the same GPUs' all-reduces.
func TestPerformanceDirections(t *testing.T) {
	t.Parallel()
	tp2 := deployment(t, "llama-3.1-70b", "", natron.Profiles, "h100-80gb-x8", 2)
	tp4 := deployment(t, "llama-3.1-70b", "", natron.Profiles, "h100-80gb-x8", 4)
	fp8 := deployment(t, "llama-3.1-70b", "fp8", natron.Profiles, "h100-80gb-x8", 2)
	if tp4.TPOT(1, 2048) >= tp2.TPOT(1, 2048) {
		t.Error("tensor parallel 4 is not faster per token than 2")
	}
	if tp2.TPOT(1, 32768) <= tp2.TPOT(1, 2048) {
		t.Error("a longer context does not slow decoding")
	}
	if tp2.TokensPerSecond(32, 2048) <= 4*tp2.TokensPerSecond(1, 2048) {
		t.Error("a batch of 32 does not raise throughput fourfold")
	}
	if fp8.TPOT(1, 2048) >= tp2.TPOT(1, 2048) || fp8.TTFT(4096) >= tp2.TTFT(4096) {
		t.Error("FP8 weights are not faster than BF16 on an H100")
	}
	nvl, _ := aks.Sizes.SKU(nil, "Standard_NC80adis_H100_v5")
	link := tp2
	link.SKU.Link = nvl.Link // PCIe Gen5 instead of NVLink
	if link.TPOT(1, 2048) <= tp2.TPOT(1, 2048) {
		t.Error("PCIe all-reduces are not slower than NVLink")
	}
	moe := deployment(t, "mixtral-8x7b", "", natron.Profiles, "h100-80gb-x8", 2)
	if moe.weightBytesRead(1) >= moe.weightBytesRead(16) || moe.weightBytesRead(64) > moe.weightBytesRead(1)*46.7/12.9+1 {
		t.Error("a mixture of experts reads its active weights for one sequence, up to all of them for a batch")
	}
}
