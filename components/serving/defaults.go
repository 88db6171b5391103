package serving

import (
	"fmt"

	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/models"
)

// What a model gets when its config leaves a key out.
const (
	DefaultMinReplicas      = 1
	DefaultQueueDepthTarget = 5
	// MinDefaultContext is the shortest maxModelLen the default settles
	// for when the native context does not fit: below it, the smallest
	// tensor parallelism is not worth the model.
	MinDefaultContext = 8192
	// contextStep rounds a memory-capped maxModelLen down.
	contextStep = 1024
)

// WithDefaults fills in what a validated model's config leaves out, from
// its catalog entry (nil: none) and its pool: the size and shape of the
// model; dtype auto; gpuMemoryUtilization 0.9; the smallest tensor
// parallelism that holds the native context (or, failing that,
// MinDefaultContext tokens); maxModelLen the native context, capped by
// memory; replicas from 1 to what the pool holds; 5 waiting requests per
// replica before scaling out. estimatedFrom names the catalog model whose
// shape stands in for a model given by size only, "" otherwise.
func (m ModelSpec) WithDefaults(entry *models.Card, pool gpupool.Facts) (out ModelSpec, estimatedFrom string) {
	out = m
	native := 0
	if entry != nil {
		native = entry.NativeContext
		if out.ParametersB == 0 && out.WeightsGB == 0 {
			out.ParametersB = entry.ParametersB
		}
		if out.Quantization == "" {
			out.Quantization = entry.Quantization
		}
		if out.Shape == nil {
			shape := entry.Shape
			out.Shape = &shape
		}
	}
	if out.Dtype == "" {
		out.Dtype = fit.DefaultDtype
	}
	if out.Shape == nil {
		// Sizing stands the nearest catalog model's shape in (KVShape)
		estimatedFrom = out.Model().KVShape().Name
	}
	if out.GPUMemoryUtilization == 0 {
		out.GPUMemoryUtilization = fit.DefaultUtilization
	}
	if out.QueueDepthTarget == 0 {
		out.QueueDepthTarget = DefaultQueueDepthTarget
	}
	if out.MinReplicas == nil {
		n := DefaultMinReplicas
		out.MinReplicas = &n
	}
	want := out.MaxModelLen
	if want == 0 {
		want = native
	}
	if out.TensorParallel == 0 {
		out.TensorParallel = smallestTP(out, pool, want)
	}
	if out.MaxModelLen == 0 {
		fm := out.Model()
		fm.MaxModelLen = 0
		room := fit.Sizing(fm, pool, out.TensorParallel).KVTokens() / max(out.Concurrency, 1)
		out.MaxModelLen = native
		if capped := room / contextStep * contextStep; capped < native && capped > 0 {
			out.MaxModelLen = capped
		}
	}
	if out.MaxReplicas == 0 {
		out.MaxReplicas = max(pool.MaxNodes*pool.GPUResourcesPerNode/out.TensorParallel, out.Replicas(), 1)
	}
	return out, estimatedFrom
}

// smallestTP is the smallest tensor parallelism that holds want tokens,
// else the smallest that holds MinDefaultContext (or want, if shorter),
// else the largest there is (which Fit then reports).
func smallestTP(m ModelSpec, pool gpupool.Facts, want int) int {
	for _, context := range []int{want, min(want, MinDefaultContext)} {
		fm := m.Model()
		fm.MaxModelLen = context
		if tp := fit.FirstFit(fm, pool); tp > 0 {
			return tp
		}
	}
	tps := fit.TensorParallels(m.Model(), pool)
	return tps[len(tps)-1]
}

// EstimateWarning is what the program logs for a model whose KV cache is
// estimated: the keys that would make it exact.
func EstimateWarning(key string, m ModelSpec, from string) string {
	return fmt.Sprintf("%s: the KV cache of %s is estimated from %s, the catalog model nearest its %.3gB parameters; name the model (%s.model: one of %v) or give its shape (%s.shape: {layers, attentionHeads, kvHeads, headDim, hiddenSize}) for an exact fit",
		key, m.Name, from, m.Model().SizeB(), key, models.Known.Names(), key)
}
