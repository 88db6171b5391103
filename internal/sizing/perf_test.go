package sizing

import (
	"math"
	"testing"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/models"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

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
	kv8 := tp2
	kv8.KVBytes = 1
	if kv8.TPOT(32, 32768) >= tp2.TPOT(32, 32768) || kv8.TPOT(1, 128) < tp2.TPOT(1, 128)*0.999 {
		t.Error("an fp8 KV cache does not speed up a decode that reads much KV, or changes one that reads little")
	}
	if tp2.Under(16, 4096, 256).ITL <= tp2.Under(16, 128, 256).ITL {
		t.Error("the other streams' long prompts do not slow decoding (chunked prefill)")
	}
	link := tp2
	link.SKU.Link = catalog.PCIe5
	if link.TPOT(1, 2048) <= tp2.TPOT(1, 2048) {
		t.Error("PCIe all-reduces are not slower than NVLink")
	}
	moe := deployment(t, "mixtral-8x7b", "", natron.Profiles, "h100-80gb-x8", 2)
	g := moe.Model.GatheredB() // the input embedding table: looked up, not read
	if moe.weightBytesRead(1) >= moe.weightBytesRead(16) || moe.weightBytesRead(64) > moe.weightBytesRead(1)*(46.7-g)/(12.9-g)+1 {
		t.Error("a mixture of experts reads its active weights for one sequence, up to all of them for a batch")
	}
	// Untied, the input table is only looked up: a step reads the output
	// head (vocab × hidden) but not the table's other copy; tied, the one
	// table is the head and is read whole.
	dense := deployment(t, "llama-3.1-8b", "", natron.Profiles, "h100-80gb-x8", 1)
	tied := dense
	tied.Model.Tied = true
	if d := tied.weightBytesRead(1) - dense.weightBytesRead(1); math.Abs(d-128256*4096*2) > 1 {
		t.Errorf("an untied model reads %.0f bytes less than a tied one, want its input table's %d", d, 128256*4096*2)
	}
}
