// Package serving is model serving on the GPU pools. This part is the fit
// check: whether a model's weights, a KV-cache reserve and its replicas fit
// the pool it is meant for, with advice on what to change when they do not.
package serving

import (
	"fmt"
	"math"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/components/check"
	"github.com/natron/gpu-node-pools/components/gpupool"
)

// Model is what the fit check needs to know about a model.
type Model struct {
	Name string
	// ParametersB is billions of parameters; WeightsGB overrides it.
	ParametersB float64
	WeightsGB   float64
	// Dtype is vLLM's --dtype, Quantization its --quantization ("": none).
	Dtype                string
	Quantization         string
	TensorParallel       int
	GPUMemoryUtilization float64
	MaxReplicas          int
}

// Weights is the size in GB of the model's weights: parameters × the
// stored width, the quantized one where there is a quantization (a 7B
// float16 model is about 14 GB, 70B about 140 GB, 70B in fp8 about 70 GB).
func (m Model) Weights() float64 {
	if m.WeightsGB > 0 {
		return m.WeightsGB
	}
	return m.ParametersB * m.BytesPerParameter()
}

// Sharing is how a pool's GPU resources are shared, "" when each is a
// whole GPU of its own.
func Sharing(pool gpupool.Pool) string {
	switch {
	case pool.MIGProfile != "":
		return fmt.Sprintf("a MIG slice (%s): a CUDA process sees one MIG device", pool.MIGInstance)
	case pool.TimeSlicing > 1:
		return fmt.Sprintf("a time-sliced share (%d per GPU): two shares may be the same physical GPU", pool.TimeSlicing)
	}
	return ""
}

// KVReserveGB is the GPU memory kept free for the KV cache beyond the
// weights: 10% of the weights, at least 2 GB, so a model that barely loads
// is not accepted (it would serve one short request at a time).
func (m Model) KVReserveGB() float64 { return math.Max(2, 0.1*m.Weights()) }

// Fit checks a model (at key path p) against its pool's facts: each
// problem names the key to change (tensorParallel or maxReplicas) and what
// to change it to. Nothing when the model fits.
func Fit(p *field.Path, m Model, pool gpupool.Pool) field.ErrorList {
	var out field.ErrorList
	perNode := pool.GPUResourcesPerNode
	mem := float64(pool.MemoryPerGPUResourceGB)
	util := m.GPUMemoryUtilization
	tp := m.TensorParallel
	need := m.Weights() + m.KVReserveGB()
	divisors := divisorsOf(perNode)

	if msg := quantizationMisfit(m.Quantization, pool.GPUModel, pool.ComputeCapability); msg != "" {
		out = append(out, check.Invalid(p.Child("quantization"), m.Quantization, "%s", msg))
	}
	if sharing := Sharing(pool); tp > 1 && sharing != "" {
		// tensor parallelism needs tp distinct GPUs in one process group
		out = append(out, check.Invalid(p.Child("tensorParallel"), tp,
			"must be 1 on pool %s, where each GPU resource is %s; use a pool of whole GPUs to shard a model", pool.Name, sharing))
	} else if !slices.Contains(divisors, tp) {
		out = append(out, check.Invalid(p.Child("tensorParallel"), tp,
			"must divide the %d GPUs of one %s node (%v): a model's shards run on one node", perNode, pool.Name, divisors))
	} else if need > mem*float64(tp)*util {
		advice := "use a pool with more GPU memory"
		if minTP := int(math.Ceil(need / (mem * util))); minTP <= perNode {
			for _, d := range divisors {
				if d >= minTP {
					advice = fmt.Sprintf("use tensorParallel >= %d or a larger pool", d)
					break
				}
			}
		}
		out = append(out, check.Invalid(p.Child("tensorParallel"), tp,
			"%s needs about %.0f GB of weights plus %.0f GB of KV cache, pool %s gives %.0f GB per GPU × %d × gpuMemoryUtilization %.2f = %.0f GB; %s",
			m.Name, m.Weights(), m.KVReserveGB(), pool.Name, mem, tp, util, mem*float64(tp)*util, advice))
	}
	if gpus, have := m.MaxReplicas*tp, pool.MaxNodes*perNode; gpus > have {
		out = append(out, check.Invalid(p.Child("maxReplicas"), m.MaxReplicas,
			"%d replicas × tensorParallel %d = %d GPUs, pool %s has at most %d nodes × %d GPUs = %d; lower maxReplicas to %d or raise the pool's maxNodes",
			m.MaxReplicas, tp, gpus, pool.Name, pool.MaxNodes, perNode, have, max(have/max(tp, 1), 0)))
	}
	return out
}

func divisorsOf(n int) []int {
	var d []int
	for i := 1; i <= n; i++ {
		if n%i == 0 {
			d = append(d, i)
		}
	}
	return d
}

// StartupBudgetSeconds is how long a replica may take to load its weights
// from the shared cache and warm up before Kubernetes gives up on it:
// 15 minutes of warm-up (CUDA graphs, compilation) plus twice the time to
// read the weights at bandwidthMBps (replicas starting together share the
// bandwidth), never less than KAITO's 15 min + 18 s per GiB clamped to
// 30-180 min, and at most 6 hours.
func StartupBudgetSeconds(weightsGB, bandwidthMBps float64) int {
	ours := 900 + 2*weightsGB*1000/bandwidthMBps
	gib := weightsGB * 1e9 / (1 << 30)
	kaito := math.Min(math.Max(900+18*gib, 1800), 10800)
	return int(math.Ceil(math.Min(math.Max(ours, kaito), 21600)))
}
