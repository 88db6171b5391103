// Package fit is whether a model fits a GPU pool under vLLM: the pure maths
// (no Pulumi) that serving, sizing and the plan share. This part is the fit
// check: whether a model's weights, vLLM's runtime, the KV cache of its
// maxModelLen (memory.go) and its replicas fit the pool it is meant for,
// with advice on what to change when they do not.
package fit

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/models"
)

// Model is what the fit check needs to know about a model.
type Model struct {
	Name string
	// ParametersB is billions of parameters; WeightsGB overrides it.
	ParametersB float64
	WeightsGB   float64
	// Dtype is vLLM's --dtype, Quantization its --quantization ("": none),
	// KVCacheDtype its --kv-cache-dtype ("" or auto: the dtype's; fp8).
	Dtype                string
	Quantization         string
	KVCacheDtype         string
	TensorParallel       int
	GPUMemoryUtilization float64
	MaxReplicas          int
	// MaxModelLen is vLLM's --max-model-len; Concurrency the sequences of
	// that length one replica must hold at once (0 or 1: one).
	MaxModelLen int
	Concurrency int
	// Shape sizes the KV cache: the catalog's or the config's; zero, the
	// nearest catalog model's by parameter count stands in (KVShape).
	Shape models.Shape
	// Set says which sizing keys the stack file gives (the others are
	// defaults): a misfit is reported against a key the user wrote, or
	// else against the model itself.
	Set Keys
}

// Keys are sizing keys a stack file may give.
type Keys struct{ TensorParallel, MaxModelLen bool }

// SizeB is the model's size in billions of parameters, from its weights
// where only those are given.
func (m Model) SizeB() float64 {
	if m.ParametersB > 0 {
		return m.ParametersB
	}
	return m.WeightsGB / m.BytesPerParameter()
}

// Estimated reports whether the KV cache is sized from a stand-in shape.
func (m Model) Estimated() bool { return m.Shape.IsZero() }

// KVShape is the model whose shape sizes the KV cache: m itself, or the
// catalog model nearest its size (the documented estimate for a model
// given by parametersB or weightsGB only).
func (m Model) KVShape() models.Card {
	if !m.Estimated() {
		return models.Card{Name: m.Name, Shape: m.Shape}
	}
	return models.Known.Nearest(m.SizeB())
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
func Sharing(pool gpupool.Facts) string {
	switch {
	case pool.MIGProfile != "":
		return fmt.Sprintf("a MIG slice (%s): a CUDA process sees one MIG device", pool.MIGInstance)
	case pool.TimeSlicing > 1:
		return fmt.Sprintf("a time-sliced share (%d per GPU): two shares may be the same physical GPU", pool.TimeSlicing)
	}
	return ""
}

// TensorParallels are the tensor-parallel sizes model m can run with on
// one node of pool: divisors of the node's GPUs that the model's heads
// divide by, only 1 where GPUs are shared.
func TensorParallels(m Model, pool gpupool.Facts) []int {
	if Sharing(pool) != "" {
		return []int{1}
	}
	var out []int
	for _, d := range divisorsOf(pool.GPUResourcesPerNode) {
		if m.Shape.TensorParallelProblem(d) == "" {
			out = append(out, d)
		}
	}
	return out
}

// Fit checks a model (at key path p) against its pool's facts: each
// problem names the key to change and what would fit, on this pool or,
// from others (the target's node shapes), on another. Nothing when the
// model fits.
func Fit(p *field.Path, m Model, pool gpupool.Facts, others ...catalog.SKU) field.ErrorList {
	var out field.ErrorList
	tp := m.TensorParallel
	if msg := QuantizationMisfit(m.Quantization, pool.GPUModel, pool.ComputeCapability); msg != "" {
		out = append(out, fielderr.Invalid(p.Child("quantization"), m.Quantization, "%s", msg))
	}
	if msg := KVCacheDtypeMisfit(m.KVCacheDtype, pool.GPUModel, pool.ComputeCapability); msg != "" {
		out = append(out, fielderr.Invalid(p.Child("kvCacheDtype"), m.KVCacheDtype, "%s", msg))
	}
	divisors := divisorsOf(pool.GPUResourcesPerNode)
	switch sharing := Sharing(pool); {
	case tp > 1 && sharing != "":
		// tensor parallelism needs tp distinct GPUs in one process group
		return append(out, fielderr.Invalid(p.Child("tensorParallel"), tp,
			"must be 1 on pool %s, where each GPU resource is %s; use a pool of whole GPUs to shard a model", pool.Name, sharing))
	case !slices.Contains(divisors, tp):
		return append(out, fielderr.Invalid(p.Child("tensorParallel"), tp,
			"must divide the %d GPUs of one %s node (%v): a model's shards run on one node", pool.GPUResourcesPerNode, pool.Name, divisors))
	}
	if why := m.Shape.TensorParallelProblem(tp); why != "" {
		return append(out, fielderr.Invalid(p.Child("tensorParallel"), tp, "vLLM refuses it: %s; use one of %v", why, TensorParallels(m, pool)))
	}
	mem := Sizing(m, pool, tp)
	switch {
	case mem.KVTokens() < mem.NeededTokens:
		out = append(out, memoryMisfit(p, m, pool, mem, others))
	case mem.HeadroomGiB() < CUDAGraphGiB:
		out = append(out, fielderr.Invalid(p.Child("gpuMemoryUtilization"), m.GPUMemoryUtilization,
			"leaves %.2f GiB of each GPU above vLLM's budget, and its CUDA graphs take about %.1f GiB there; lower it to %.2f or less",
			mem.HeadroomGiB(), CUDAGraphGiB, math.Floor((1-CUDAGraphGiB/mem.TotalGiB)*100)/100))
	}
	if gpus, have := m.MaxReplicas*tp, pool.MaxNodes*pool.GPUResourcesPerNode; gpus > have {
		out = append(out, fielderr.Invalid(p.Child("maxReplicas"), m.MaxReplicas,
			"%d replicas × tensorParallel %d = %d GPUs, pool %s has at most %d nodes × %d GPUs = %d; lower maxReplicas to %d or raise the pool's maxNodes",
			m.MaxReplicas, tp, gpus, pool.Name, pool.MaxNodes, pool.GPUResourcesPerNode, have, max(have/max(tp, 1), 0)))
	}
	return out
}

// memoryMisfit says by how much a model does not fit at its tensor
// parallelism, and what would: a larger tensorParallel on this pool, or
// else quantizing it, a shorter maxModelLen, fewer concurrent streams, or
// a node shape of the target that holds it. It names the key the user
// wrote, or the model when no size key of theirs is to blame.
func memoryMisfit(p *field.Path, m Model, pool gpupool.Facts, mem Memory, others []catalog.SKU) *field.Error {
	tp := mem.TensorParallel
	g := float64(tp)
	need := fmt.Sprintf("%s at maxModelLen %d", m.Name, m.MaxModelLen)
	if c := max(m.Concurrency, 1); c > 1 {
		need += fmt.Sprintf(" × concurrency %d", c)
	}
	need += fmt.Sprintf(" needs %.0f GiB (%.0f GiB of weights, %.1f GiB of KV cache, %.1f GiB for the runtime); tensorParallel %d on pool %s gives %d × %.0f GiB × gpuMemoryUtilization %.2f = %.0f GiB",
		g*mem.NeedGiB(), g*mem.WeightsGiB, g*mem.NeededKVGiB(), g*mem.ReserveGiB(), tp, pool.Name, tp, mem.TotalGiB, mem.Utilization, g*mem.BudgetGiB())
	for _, t := range TensorParallels(m, pool) {
		if t > tp && FitsAt(m, pool, t) {
			return fielderr.Invalid(p.Child("tensorParallel"), tp, "%s; tensorParallel %d fits", need, t)
		}
	}
	advice := strings.Join(whatFits(m, pool, others), ", or ")
	switch {
	case m.Set.MaxModelLen && mem.KVGiB() > 0: // the weights fit: the context asked for does not
		return fielderr.Invalid(p.Child("maxModelLen"), m.MaxModelLen, "%s; %s", need, advice)
	case m.Set.TensorParallel:
		return fielderr.Invalid(p.Child("tensorParallel"), tp, "%s; %s", need, advice)
	}
	return fielderr.Invalid(p, m.Name, "does not fit pool %s at any tensorParallel %v: %s; what fits: %s", pool.Name, TensorParallels(m, pool), need, advice)
}

// whatFits lists the changes that make m fit: on this pool quantized (to
// the first method its GPUs run, from a 16-bit model), at a shorter
// maxModelLen or with fewer streams at the largest tensor parallelism;
// else the node shape of others that holds it with the least GPU memory.
func whatFits(m Model, pool gpupool.Facts, others []catalog.SKU) []string {
	var out []string
	valid := TensorParallels(m, pool)
	top := valid[len(valid)-1]
	if m.Quantization == "" {
		for _, q := range []string{"fp8", "awq"} {
			if QuantizationMisfit(q, pool.GPUModel, pool.ComputeCapability) != "" {
				continue
			}
			mq := m
			mq.Quantization, mq.WeightsGB = q, 0
			if t := FirstFit(mq, pool); t > 0 {
				out = append(out, fmt.Sprintf("quantization %s (%s) at tensorParallel %d", q, Quantizations[q].About, t))
				break
			}
		}
	}
	best := Sizing(m, pool, top)
	if best.KVTokens() >= BlockTokens && m.MaxModelLen > 0 {
		out = append(out, fmt.Sprintf("maxModelLen %d or less at tensorParallel %d", best.KVTokens()/max(m.Concurrency, 1), top))
		if streams := best.KVTokens() / m.MaxModelLen; m.Concurrency > 1 && streams >= 1 {
			out = append(out, fmt.Sprintf("concurrency %d or less (concurrent streams of maxModelLen per replica; more replicas serve more) at tensorParallel %d", streams, top))
		}
	}
	if sku, t, ok := elsewhere(m, others); ok {
		out = append(out, fmt.Sprintf("tensorParallel %d on %s fits", t, sku))
	}
	if len(out) == 0 {
		out = append(out, "no node shape of this target holds it: quantize it or serve a smaller model")
	}
	return out
}

// ChosenTensorParallel explains a tensor parallelism the stack file does
// not give (the smallest that holds the model's streams, chosen by
// default) when it is more than one GPU: what the next smaller one holds,
// so that a high concurrency is seen as the cause. "" otherwise.
func ChosenTensorParallel(m Model, pool gpupool.Facts) string {
	if m.Set.TensorParallel || m.TensorParallel <= 1 || m.MaxModelLen <= 0 {
		return ""
	}
	why := fmt.Sprintf("not set: the smallest that holds concurrency %d × maxModelLen %d", max(m.Concurrency, 1), m.MaxModelLen)
	smaller := 0
	for _, t := range TensorParallels(m, pool) {
		if t < m.TensorParallel {
			smaller = t
		}
	}
	if smaller == 0 {
		return why
	}
	if streams := Sizing(m, pool, smaller).KVTokens() / m.MaxModelLen; streams >= 1 {
		return fmt.Sprintf("%s; tensorParallel %d holds %d such streams: concurrency %d or less (more replicas for more users) keeps each replica on %d GPUs",
			why, smaller, streams, streams, smaller)
	}
	return fmt.Sprintf("%s; tensorParallel %d holds not one such stream", why, smaller)
}

// FirstFit is the smallest tensor parallelism at which m fits pool, 0 for
// none.
func FirstFit(m Model, pool gpupool.Facts) int {
	for _, t := range TensorParallels(m, pool) {
		if FitsAt(m, pool, t) {
			return t
		}
	}
	return 0
}

func FitsAt(m Model, pool gpupool.Facts, tp int) bool { return Sizing(m, pool, tp).Fits() }

// elsewhere is the node shape among others that holds the model with the
// least GPU memory in use, and its tensor parallelism.
func elsewhere(m Model, others []catalog.SKU) (string, int, bool) {
	best, bestTP, bestMem := "", 0, math.Inf(1)
	for _, s := range others {
		if QuantizationMisfit(m.Quantization, s.GPU.Model, s.GPU.ComputeCapability) != "" {
			continue
		}
		pool := gpupool.NewFacts(gpupool.Spec{Name: s.Name}, s, nil)
		for _, t := range TensorParallels(m, pool) {
			if used := float64(t * s.GPU.MemoryGB); FitsAt(m, pool, t) && used < bestMem {
				best, bestTP, bestMem = s.Name, t, used
			}
		}
	}
	return best, bestTP, best != ""
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
