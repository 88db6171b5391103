package fit

import (
	"math"

	"github.com/natron/gpu-node-pools/internal/gpupool"
)

// vLLM's memory rule, at v0.11.0 (the pinned image): a worker may use
// total × gpu_memory_utilization of its GPU; the weights, the memory
// outside PyTorch and the peak activation of a profiling run come off
// that, and the rest is KV cache (Worker.determine_available_memory,
// vllm/v1/worker/gpu_worker.py). The engine refuses to start when the KV
// cache cannot hold one sequence of max_model_len tokens
// (check_enough_kv_cache_memory, vllm/v1/core/kv_cache_utils.py). The
// constants below are measured, each from the log named.
const (
	// GiB is 2^30 bytes: vLLM reports memory in GiB.
	GiB = 1 << 30
	// CUDAHiddenGiB is the part of the framebuffer the driver reports
	// (nvidia-smi) that CUDA does not report as total (driver
	// reservations): an H100 80GB HBM3, 81559 MiB (79.65 GiB) by
	// nvidia-smi, reports total_gpu_memory 79.22 GiB to vLLM
	// (vllm-project/vllm pull 10511; pull 12126 names the GPU,
	// "H100-80G"). It was 0.78, taken from the data sheet's 80 GB as
	// 80 GiB.
	CUDAHiddenGiB = 0.43
	// NonTorchGiB is memory outside PyTorch's allocator (CUDA context,
	// cuBLAS workspaces) of a worker with tensor parallelism 1, and
	// NonTorchTPGiB with tensor parallelism (NCCL buffers, custom
	// all-reduce): Meta-Llama-3-8B at -tp 1 and -tp 2 in the same log,
	// "non_torch_memory 1.79GiB" and "3.58GiB".
	NonTorchGiB   = 1.79
	NonTorchTPGiB = 3.58
	// ActivationGiB is the peak activation of the profiling run of a model
	// of hidden size ActivationHidden ("PyTorch activation peak memory
	// 1.26GiB", the same log, Meta-Llama-3-8B: hidden size 4096); it grows
	// with the hidden size, and is not split across tensor-parallel ranks
	// here (an overstatement for large tp, never an understatement).
	ActivationGiB    = 1.26
	ActivationHidden = 4096
	// CUDAGraphGiB is kept for capturing CUDA graphs, which happens after
	// the KV cache is allocated, outside gpu_memory_utilization: the
	// headroom above the budget must hold them. vllm-project/vllm pull
	// 11349 logs "Graph capturing finished in 14 secs, took 0.21 GiB" for
	// Llama-3.2-1B; graphs grow with the model and batch sizes, so more
	// than twice that is kept.
	CUDAGraphGiB = 0.5
	// BlockTokens is vLLM's default KV block size: the cache holds whole
	// blocks (CacheConfig.block_size, vllm/config/cache.py).
	BlockTokens = 16
)

// Memory is one replica's memory on each of its GPUs: what vLLM will find
// and reserve, and how many tokens of KV cache are left.
type Memory struct {
	// TensorParallel is the GPUs of one replica.
	TensorParallel int
	// TotalGiB is the memory CUDA reports for one GPU resource (a whole
	// GPU, a MIG slice, or a whole GPU shared by time-slicing), and
	// Utilization the fraction vLLM may use (a time-sliced share's part).
	TotalGiB, Utilization float64
	// Shares is how many replicas share one GPU (time-slicing; 1 otherwise).
	Shares int
	// WeightsGiB, NonTorchGiB and ActivationGiB come off the budget.
	WeightsGiB, NonTorchGiB, ActivationGiB float64
	// KVBytesPerToken is one token's KV cache on one GPU.
	KVBytesPerToken int
	// NeededTokens is what the KV cache must hold: maxModelLen tokens for
	// each of the concurrent sequences (at least one).
	NeededTokens int
}

// BudgetGiB is what vLLM may use on one GPU.
func (m Memory) BudgetGiB() float64 { return m.TotalGiB * m.Utilization }

// ReserveGiB is the runtime's share: outside PyTorch and activations.
func (m Memory) ReserveGiB() float64 { return m.NonTorchGiB + m.ActivationGiB }

// KVGiB is the KV cache vLLM allocates on one GPU (negative: the weights
// and the runtime alone do not fit).
func (m Memory) KVGiB() float64 { return m.BudgetGiB() - m.WeightsGiB - m.ReserveGiB() }

// KVTokens is how many tokens that cache holds, in whole blocks.
func (m Memory) KVTokens() int {
	if m.KVGiB() <= 0 || m.KVBytesPerToken <= 0 {
		return 0
	}
	blocks := math.Floor(m.KVGiB() * GiB / float64(BlockTokens*m.KVBytesPerToken))
	return int(blocks) * BlockTokens
}

// NeededKVGiB is the KV cache NeededTokens take on one GPU.
func (m Memory) NeededKVGiB() float64 {
	return float64(m.NeededTokens) * float64(m.KVBytesPerToken) / GiB
}

// NeedGiB is what one GPU needs: weights, runtime and the needed KV cache.
func (m Memory) NeedGiB() float64 { return m.WeightsGiB + m.ReserveGiB() + m.NeededKVGiB() }

// Fits reports whether vLLM starts and holds the needed tokens, with room
// for its CUDA graphs above the budget.
func (m Memory) Fits() bool {
	return m.KVTokens() >= m.NeededTokens && m.HeadroomGiB() >= CUDAGraphGiB
}

// HeadroomGiB is the memory of a GPU above the budgets of all the
// replicas that share it.
func (m Memory) HeadroomGiB() float64 {
	return m.TotalGiB * (1 - m.Utilization*float64(max(m.Shares, 1)))
}

// MaxConcurrency is how many sequences of maxModelLen tokens the cache
// holds at once, as vLLM logs it ("Maximum concurrency for N tokens per
// request").
func (m Memory) MaxConcurrency(maxModelLen int) float64 {
	if maxModelLen <= 0 {
		return 0
	}
	return float64(m.KVTokens()) / float64(maxModelLen)
}

// ShareUtilization is the gpu_memory_utilization one replica runs with: a
// time-sliced GPU's shares split the configured fraction, rounded down,
// so that every share's vLLM finds its budget free.
func ShareUtilization(util float64, pool gpupool.Facts) float64 {
	if ts := pool.TimeSlicing; ts > 1 {
		return math.Floor(util/float64(ts)*1000) / 1000
	}
	return util
}

// Sizing is the memory of model m at tensor parallelism tp on one GPU
// resource of pool.
func Sizing(m Model, pool gpupool.Facts, tp int) Memory {
	tp = max(tp, 1)
	nonTorch := NonTorchGiB
	if tp > 1 {
		nonTorch = NonTorchTPGiB
	}
	shape := m.KVShape().Shape
	hidden := shape.HiddenSize
	if hidden == 0 {
		hidden = ActivationHidden
	}
	return Memory{
		TensorParallel:  tp,
		TotalGiB:        DeviceGiB(pool) - CUDAHiddenGiB,
		Utilization:     ShareUtilization(m.GPUMemoryUtilization, pool),
		Shares:          max(pool.TimeSlicing, 1),
		WeightsGiB:      m.Weights() * 1e9 / GiB / float64(tp),
		NonTorchGiB:     nonTorch,
		ActivationGiB:   ActivationGiB * float64(hidden) / ActivationHidden,
		KVBytesPerToken: shape.KVBytesPerTokenPerGPU(tp, m.KVBytes()),
		NeededTokens:    m.MaxModelLen * max(m.Concurrency, 1),
	}
}

// DeviceGiB is the memory of the device a pod of pool sees, before what
// CUDA hides, as the driver reports it: a MIG slice is all it sees
// (gpupool.Facts.MIGInstanceMiB: 1g.12gb on an H100 NVL has 10.75 GiB); a
// whole GPU, or a time-sliced share of one, sees the framebuffer
// (gpupool.Facts.GPUMemoryMiB: an A10 has 22.5 GiB, not its data sheet's
// 24 GB taken as GiB, which left the memory-capped context no margin).
func DeviceGiB(pool gpupool.Facts) float64 {
	switch {
	case pool.MIGInstance != "" && pool.MIGInstanceMiB > 0:
		return float64(pool.MIGInstanceMiB) / 1024
	case pool.MIGInstance != "":
		return float64(pool.MemoryPerGPUResourceGB)
	case pool.GPUMemoryMiB > 0:
		return float64(pool.GPUMemoryMiB) / 1024
	}
	return float64(pool.GPUMemoryGB)
}

// KVBytes is the width of one cached key or value element: one byte for
// an fp8 KV cache, else the model's dtype (vLLM's kv_cache_dtype "auto"),
// 16-bit unless float32.
func (m Model) KVBytes() int {
	if m.KVCacheDtype == "fp8" {
		return 1
	}
	if dtypeBytes[m.Dtype] == 4 {
		return 4
	}
	return 2
}
