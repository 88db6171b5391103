package sizing

import (
	"fmt"

	"github.com/natron/gpu-node-pools/internal/catalog"
)

// Efficiency is the fraction of a GPU's data sheet speeds that the
// kernels reach: Memory of the bandwidth in a decode step (weights and KV
// cache), Compute of the dense Tensor Core rate in a prefill.
type Efficiency struct{ Memory, Compute float64 }

// EngineCost is what an engine's scheduler costs each step: a fixed part
// (scheduling, kernel launches between CUDA graphs) and a part per
// sequence in the batch (sampling, detokenizing, bookkeeping on the CPU).
// AllReduce scales the link's all-reduce latency for an engine with
// kernels of its own (TensorRT-LLM's all-reduce plugin); 0 is vLLM's, 1.
// RequestSeconds is what a served request costs outside the GPU before
// its first token reaches the client (HTTP, tokenizing, the first
// detokenized chunk); an offline batch (vLLM's latency benchmark) has none.
type EngineCost struct{ StepSeconds, PerSequenceSeconds, AllReduce, RequestSeconds float64 }

// The engine generations the oracles were measured on. The planner sizes
// vLLM's V1 engine, which the pinned image (v0.11) runs; V0 (vLLM before
// 0.8) and TensorRT-LLM (NVIDIA NIM's FP8 profiles) are calibrated only so
// that their measurements can judge the rest of the model.
const (
	VLLM    = "vllm-v1"
	VLLMV0  = "vllm-v0"
	TRTLLM  = "trtllm"
	Serving = VLLM
)

// Calibration is the model's fitted constants.
type Calibration struct {
	Engines map[string]EngineCost
	// AllReduceSeconds is one all-reduce's latency per doubling of the
	// GPUs it spans (log2 tp of them), by link (LinkKey).
	AllReduceSeconds map[string]float64
	// GPUs are the efficiencies of the GPUs an oracle covers, by model;
	// Fallback is for the others (A100 PCIe, H100 NVL, V100, T4).
	GPUs     map[string]Efficiency
	Fallback Efficiency
}

// Calibrated is the model's calibration: each figure fitted on the "fit"
// rows of oracles.tsv by least squares of the log ratio
// (TestFitIsTheCalibration re-fits them from fixed starting values and
// fails if these are not what it finds) and judged on the "held-out" rows
// (TestHeldOutOracles, and the bands every design carries).
var Calibrated = Calibration{
	Engines: map[string]EngineCost{
		VLLM:   {StepSeconds: 0.0002582, PerSequenceSeconds: 8.036e-06, RequestSeconds: 0.00533},
		VLLMV0: {StepSeconds: 0.001359, PerSequenceSeconds: 0.0001882},
		TRTLLM: {StepSeconds: 0.001967, PerSequenceSeconds: 8.036e-06, AllReduce: 2.141, RequestSeconds: 0.00533},
	},
	AllReduceSeconds: map[string]float64{"NVLink 600": 2.484e-05, "NVLink 900": 1.54e-05},
	GPUs: map[string]Efficiency{
		catalog.A100SXM80.Model: {Memory: 0.7457, Compute: 0.5319},
		catalog.H100SXM.Model:   {Memory: 0.9, Compute: 0.5319},
		catalog.H200SXM.Model:   {Memory: 0.871, Compute: 0.5319},
		catalog.A10.Model:       {Memory: 0.8467, Compute: 0.5319},
	},
	Fallback: Efficiency{Memory: 0.7457, Compute: 0.5319},
}

// LinkKey names a link in AllReduceSeconds: its kind and bandwidth
// ("NVLink 600" is the A100's NVLink 3, "NVLink 900" the H100's and
// H200's NVLink 4).
func LinkKey(l catalog.Link) string { return fmt.Sprintf("%s %d", l.Kind, l.GBps) }

// allReduceLatency is a link's latency per doubling: its own, else (PCIe,
// which no oracle covers) the slower NVLink's. The fitted figure is
// mostly the engine's cost per all-reduce (kernels, synchronisation),
// which the link does not change; what PCIe changes is the bandwidth
// term, which allReduce takes from the link.
func (c Calibration) allReduceLatency(l catalog.Link) float64 {
	if v, ok := c.AllReduceSeconds[LinkKey(l)]; ok {
		return v
	}
	return c.AllReduceSeconds[LinkKey(catalog.NVLink3)]
}

// Of is the efficiency of a GPU, and whether an oracle covers it.
func (c Calibration) Of(g catalog.GPU) (Efficiency, bool) {
	e, ok := c.GPUs[g.Model]
	if !ok {
		return c.Fallback, false
	}
	return e, true
}
