// Package sizing estimates how fast a model serves on a node shape: time
// per output token (decode), time to first token (prefill) and tokens per
// second, from the model catalog's shapes and the GPUs' data sheet speeds.
// It is a roofline model with four calibrated constants, held by tests to
// published measurements (perf_test.go).
package sizing

import (
	"math"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/models"
)

// The calibration: each constant is fitted to the oracles in perf_test.go
// (NVIDIA NIM's published Llama 3.3 70B FP8 runs on two H100s, and a Llama
// 3.1 8B BF16 single stream on an A100 40GB), not measured here.
const (
	// MemoryEfficiency is the fraction of the data sheet's bandwidth a
	// decode step reaches reading weights and KV cache.
	MemoryEfficiency = 0.8
	// ComputeEfficiency is the fraction of dense Tensor Core throughput a
	// prefill reaches.
	ComputeEfficiency = 0.5
	// StepOverheadSeconds is each decode step's fixed cost (scheduling,
	// sampling, kernel launches).
	StepOverheadSeconds = 0.0015
	// AllReduceLatency is the fixed cost of one all-reduce across a node's
	// GPUs: NVLink and PCIe.
	NVLinkLatencySeconds = 15e-6
	PCIeLatencySeconds   = 30e-6
)

// Deployment is a model served on one node shape.
type Deployment struct {
	Model models.Card
	// BytesPerParameter is the stored weight width (the dtype's or the
	// quantization's: fit.Model.BytesPerParameter).
	BytesPerParameter float64
	// FP8 is true when the weights are computed in FP8 (quantization fp8
	// on a GPU with FP8 Tensor Cores).
	FP8            bool
	SKU            catalog.SKU
	TensorParallel int
}

// NewDeployment is model m as serving sizes it (its dtype and
// quantization) on sku at tensor parallelism tp.
func NewDeployment(entry models.Card, m fit.Model, sku catalog.SKU, tp int) Deployment {
	return Deployment{Model: entry, BytesPerParameter: m.BytesPerParameter(), SKU: sku, TensorParallel: max(tp, 1),
		FP8: m.Quantization == "fp8" && sku.GPU.RunsNatively("fp8")}
}

// weightBytesRead is what one decode step of batch sequences reads of the
// weights on one GPU. A dense model reads them all; a mixture of experts
// reads the active share for one sequence, and more experts as the batch
// grows: each expert weight is missed by one token with probability
// 1 - active/total, so by the batch with that probability to the power of
// the batch.
func (d Deployment) weightBytesRead(batch int) float64 {
	total, active := d.Model.ParametersB, d.Model.ActiveParametersB
	touched := total
	if active > 0 && active < total {
		r := active / total
		touched = active + (total-active)*(1-math.Pow(1-r, float64(batch-1)))
	}
	return touched * 1e9 * d.BytesPerParameter / float64(d.TensorParallel)
}

// allReduce is the time of one all-reduce of bytes across the replica's
// GPUs: the link's latency plus a ring's 2(tp-1)/tp of the data over one
// direction of the link.
func (d Deployment) allReduce(bytes float64) float64 {
	tp := float64(d.TensorParallel)
	if tp <= 1 {
		return 0
	}
	latency := PCIeLatencySeconds
	if d.SKU.Link.Kind == "NVLink" {
		latency = NVLinkLatencySeconds
	}
	perDirection := float64(d.SKU.Link.GBps) / 2 * 1e9
	return latency + 2*(tp-1)/tp*bytes/perDirection
}

// flops is the GPU's dense Tensor Core throughput for the deployment's
// compute type, FLOP/s.
func (d Deployment) flops() float64 {
	g := d.SKU.GPU
	tf := g.BF16TFLOPS
	switch {
	case d.FP8:
		tf = g.FP8TFLOPS
	case tf == 0: // no BF16 (V100, T4): float16
		tf = g.FP16TFLOPS
	}
	return tf * 1e12
}

// TPOT is the time per output token of each of batch sequences decoding
// together with context tokens each in the KV cache: the step reads this
// GPU's share of the weights and of the batch's KV cache at the memory
// bandwidth (or computes at the Tensor Cores' rate, whichever is slower),
// plus two all-reduces per layer and the step's fixed cost.
func (d Deployment) TPOT(batch, context int) float64 {
	batch = max(batch, 1)
	kv := float64(batch) * float64(context) * float64(d.Model.KVBytesPerTokenPerGPU(d.TensorParallel, 2))
	memory := (d.weightBytesRead(batch) + kv) / (float64(d.SKU.GPU.BandwidthGBps) * 1e9 * MemoryEfficiency)
	compute := 2 * d.Model.ActiveParametersB * 1e9 * float64(batch) / float64(d.TensorParallel) / (d.flops() * ComputeEfficiency)
	comm := 2 * float64(d.Model.Layers) * d.allReduce(float64(batch*d.Model.HiddenSize*2))
	return math.Max(memory, compute) + comm + StepOverheadSeconds
}

// TTFT is the time to first token of a prompt of prompt tokens alone on a
// replica: the prefill's matrix multiplications (2 FLOP per active
// parameter and token) and attention (2 × layers × prompt² × hidden), at
// the Tensor Cores' rate over the replica's GPUs, plus two all-reduces of
// the prompt's activations per layer.
func (d Deployment) TTFT(prompt int) float64 {
	p := float64(prompt)
	work := 2*d.Model.ActiveParametersB*1e9*p + 2*float64(d.Model.Layers)*p*p*float64(d.Model.HiddenSize)
	compute := work / float64(d.TensorParallel) / (d.flops() * ComputeEfficiency)
	comm := 2 * float64(d.Model.Layers) * d.allReduce(p*float64(d.Model.HiddenSize)*2)
	return compute + comm + StepOverheadSeconds
}

// TokensPerSecond is one replica's output rate with batch sequences
// decoding together.
func (d Deployment) TokensPerSecond(batch, context int) float64 {
	return float64(max(batch, 1)) / d.TPOT(batch, context)
}
