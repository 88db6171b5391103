// Package sizing estimates how fast a model serves on a node shape and
// plans the cheapest design that meets a target: time per output token
// (decode), time to first token (prefill), end-to-end latency and tokens
// per second, from the model catalog's shapes and the GPUs' data sheet
// speeds. It is a roofline model with per-GPU efficiencies
// (calibration.go) fitted on published measurements and judged on others
// it was not fitted on (oracles.tsv, oracles.go).
package sizing

import (
	"math"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/models"
)

// Deployment is a model served on one node shape.
type Deployment struct {
	Model models.Card
	// BytesPerParameter is the stored weight width (the dtype's or the
	// quantization's: fit.Model.BytesPerParameter); KVBytes the width of
	// one cached key or value element (2, or 1 with an fp8 KV cache).
	BytesPerParameter float64
	KVBytes           int
	// FP8 is true when the weights are computed in FP8 (quantization fp8
	// on a GPU with FP8 Tensor Cores).
	FP8            bool
	SKU            catalog.SKU
	TensorParallel int
	Efficiency
	// Engine is the serving engine's step costs; Calibration holds the
	// links' latencies.
	Engine      EngineCost
	Calibration Calibration
}

// NewDeployment is model m as serving sizes it (its dtype, quantization
// and KV cache dtype) on sku at tensor parallelism tp.
func NewDeployment(entry models.Card, m fit.Model, sku catalog.SKU, tp int) Deployment {
	return Calibrated.Deployment(entry, m, sku, tp)
}

// Deployment is NewDeployment under calibration c, served by vLLM.
func (c Calibration) Deployment(entry models.Card, m fit.Model, sku catalog.SKU, tp int) Deployment {
	return c.On(Serving, entry, m, sku, tp)
}

// On is the deployment served by engine (VLLM, VLLMV0, TRTLLM).
func (c Calibration) On(engine string, entry models.Card, m fit.Model, sku catalog.SKU, tp int) Deployment {
	eff, _ := c.Of(sku.GPU)
	return Deployment{Model: entry, BytesPerParameter: m.BytesPerParameter(), KVBytes: m.KVBytes(), SKU: sku, TensorParallel: max(tp, 1),
		FP8: m.Quantization == "fp8" && sku.GPU.RunsNatively("fp8"), Efficiency: eff, Engine: c.Engines[engine], Calibration: c}
}

// weightBytesRead is what one decode step of batch sequences reads of the
// weights on one GPU. A dense model reads them all but the input
// embedding table, of which it gathers only the batch's rows. A mixture of experts
// reads its shared weights (attention, embeddings, shared experts) always
// and the routed experts the batch's tokens touch: with E experts and k
// per token, routed uniformly, an expert is missed by one token with
// probability 1 - k/E, so a batch touches the share 1 - (1 - k/E)^batch.
func (d Deployment) weightBytesRead(batch int) float64 {
	total, active := d.Model.ParametersB, d.Model.ActiveParametersB
	touched := total
	if e, k := float64(d.Model.Experts), float64(d.Model.ExpertsPerToken); e > 0 && k > 0 && active < total {
		routed := (total - active) / (1 - k/e) // all routed experts' parameters
		touched = total - routed + routed*(1-math.Pow(1-k/e, float64(max(batch, 1))))
	}
	return (touched - d.Model.GatheredB()) * 1e9 * d.BytesPerParameter / float64(d.TensorParallel)
}

// matmulParametersB are the parameters a token is multiplied through
// (billions): the active ones but the input embedding table, which is
// only looked up.
func (d Deployment) matmulParametersB() float64 {
	return d.Model.ActiveParametersB - d.Model.GatheredB()
}

// allReduce is the time of one all-reduce of bytes across the replica's
// GPUs: the link's latency for each doubling of the GPUs (log2 tp steps
// of a tree or recursive doubling), plus a ring's 2(tp-1)/tp of the data
// over one direction of the link.
func (d Deployment) allReduce(bytes float64) float64 {
	tp := float64(d.TensorParallel)
	if tp <= 1 {
		return 0
	}
	latency := d.Calibration.allReduceLatency(d.SKU.Link) * math.Log2(tp)
	if f := d.Engine.AllReduce; f > 0 {
		latency *= f
	}
	perDirection := float64(d.SKU.Link.GBps) / 2 * 1e9
	return latency + 2*(tp-1)/tp*bytes/perDirection
}

// comm is a step's tensor-parallel traffic: two all-reduces per layer of
// the step's tokens' activations (16-bit).
func (d Deployment) comm(tokens int) float64 {
	return 2 * float64(d.Model.Layers) * d.allReduce(float64(tokens*d.Model.HiddenSize*2))
}

// flops is the GPU's dense Tensor Core throughput for the deployment's
// compute type, FLOP/s, at the calibrated efficiency.
func (d Deployment) flops() float64 {
	g := d.SKU.GPU
	tf := g.BF16TFLOPS
	switch {
	case d.FP8:
		tf = g.FP8TFLOPS
	case tf == 0: // no BF16 (V100, T4): float16
		tf = g.FP16TFLOPS
	}
	return tf * 1e12 * d.Compute
}

// bandwidth is the GPU's memory bandwidth at the calibrated efficiency.
func (d Deployment) bandwidth() float64 {
	return float64(d.SKU.GPU.BandwidthGBps) * 1e9 * d.Memory
}

// DecodeStep is one decode step of batch sequences with context tokens
// each in the KV cache: the step reads this GPU's share of the weights
// the batch touches and of the batch's KV cache at the memory bandwidth
// (or computes at the Tensor Cores' rate, whichever is slower), plus two
// all-reduces per layer and the engine's step cost (fixed and per
// sequence), which dominates a small model's step.
func (d Deployment) DecodeStep(batch, context int) float64 {
	batch = max(batch, 1)
	kv := float64(batch) * float64(context) * float64(d.Model.KVBytesPerTokenPerGPU(d.TensorParallel, d.KVBytes))
	memory := (d.weightBytesRead(batch) + kv) / d.bandwidth()
	compute := 2 * d.matmulParametersB() * 1e9 * float64(batch) / float64(d.TensorParallel) / d.flops()
	return math.Max(memory, compute) + d.comm(batch) + d.Engine.StepSeconds + float64(batch)*d.Engine.PerSequenceSeconds
}

// TPOT is DecodeStep under its older name: the time per output token of
// batch streams decoding together.
func (d Deployment) TPOT(batch, context int) float64 { return d.DecodeStep(batch, context) }

// Prefill is the time to process one prompt of tokens.
func (d Deployment) Prefill(tokens int) float64 { return d.prefill(1, tokens) }

// prefill is the time to process prompts of tokens each in one step: the
// matrix multiplications (2 FLOP per active parameter and token) and
// attention (2 × layers × tokens² × hidden per prompt), at the Tensor
// Cores' rate over the replica's GPUs, but never faster than reading the
// weights once; plus two all-reduces of the tokens' activations per layer
// and a step's cost.
func (d Deployment) prefill(prompts, tokens int) float64 {
	n, p := float64(prompts), float64(tokens)
	work := n * (2*d.matmulParametersB()*1e9*p + 2*float64(d.Model.Layers)*p*p*float64(d.Model.HiddenSize))
	compute := work / float64(d.TensorParallel) / d.flops()
	return math.Max(compute, d.weightBytesRead(prompts*tokens)/d.bandwidth()) + d.comm(prompts*tokens) + d.Engine.StepSeconds
}

// TTFT is the time to first token of a prompt alone on a replica.
func (d Deployment) TTFT(prompt int) float64 { return d.Prefill(prompt) }

// TokensPerSecond is one replica's output rate with batch sequences
// decoding together.
func (d Deployment) TokensPerSecond(batch, context int) float64 {
	return float64(max(batch, 1)) / d.DecodeStep(batch, context)
}
