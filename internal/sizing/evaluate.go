package sizing

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/models"
)

// Setup is one fixed design to evaluate: a model on a node shape at a
// tensor parallelism, with concurrency streams of prompt tokens in and
// output tokens out.
type Setup struct {
	TensorParallel, Concurrency, Prompt, Output int
	// Quantization is vLLM's --quantization ("": the checkpoint's);
	// KVCacheDtype its --kv-cache-dtype ("" or auto, fp8).
	Quantization, KVCacheDtype string
}

// Evaluation is what the model predicts for a setup on vLLM, with the
// held-out band of each figure's regime.
type Evaluation struct {
	Model          string `json:"model"`
	SKU            string `json:"sku"`
	GPU            string `json:"gpu"`
	TensorParallel int    `json:"tensorParallel"`
	Concurrency    int    `json:"concurrency"`
	Prompt         int    `json:"prompt"`
	Output         int    `json:"output"`
	Quantization   string `json:"quantization,omitempty"`
	KVCacheDtype   string `json:"kvCacheDtype"`
	// TPOTMs and ITLMs are the time between output tokens (vLLM's bench
	// reports both: with every token streamed alone they are the same).
	TPOTMs float64 `json:"tpotMs"`
	ITLMs  float64 `json:"itlMs"`
	TTFTMs float64 `json:"ttftMs"`
	// E2EMs is one request's latency: its first token and the rest.
	E2EMs                     float64 `json:"e2eLatencyMs"`
	TokensPerSecondPerReplica float64 `json:"outputTokensPerSecondPerReplica"`
	TokensPerSecondPerGPU     float64 `json:"outputTokensPerSecondPerGPU"`
	// Fits is whether vLLM's KV cache holds the streams (concurrency ×
	// (prompt + output) tokens) next to the weights; KVCacheTokens is how
	// many tokens it holds, and FitProblem why it does not fit.
	Fits          bool   `json:"fits"`
	KVCacheTokens int    `json:"kvCacheTokens"`
	FitProblem    string `json:"fitProblem,omitempty"`
	// Ranges are the fastest and slowest each figure may be, from the
	// held-out oracles of its regime; Calibrated is false when no oracle
	// covers the GPU (its efficiencies are borrowed) or the model's kind
	// (its attention, a mixture of experts), and Uncovered says which
	// (Calibration.Uncovered, docs/sizing.md).
	Ranges     map[string][2]float64 `json:"ranges"`
	Calibrated bool                  `json:"calibrated"`
	Uncovered  []string              `json:"uncovered,omitempty"`
}

// Evaluate predicts one setup: the model card (a catalog model's or a
// config.json's) on sku. A setup vLLM would refuse (a tensor parallelism
// the node or the heads do not divide, a quantization or KV cache dtype
// the GPU does not run) is an error naming the flag.
func Evaluate(card models.Card, sku catalog.SKU, s Setup) (*Evaluation, error) {
	s.KVCacheDtype = cmp.Or(s.KVCacheDtype, "auto")
	s.Quantization = cmp.Or(s.Quantization, card.Quantization)
	switch {
	case s.TensorParallel < 1 || sku.GPUs%s.TensorParallel != 0:
		return nil, fmt.Errorf("--tp: must divide the %d GPUs of one %s node, got %d", sku.GPUs, sku.Name, s.TensorParallel)
	case card.TensorParallelProblem(s.TensorParallel) != "":
		return nil, fmt.Errorf("--tp: vLLM refuses %d: %s", s.TensorParallel, card.TensorParallelProblem(s.TensorParallel))
	case s.Concurrency < 1 || s.Prompt < 1 || s.Output < 1:
		return nil, fmt.Errorf("--concurrency, --prompt and --output: must be >= 1, got %d, %d, %d", s.Concurrency, s.Prompt, s.Output)
	}
	if err := checkPrecision("--", s.Quantization, s.KVCacheDtype); err != nil {
		return nil, err
	}
	if why := precisionMisfit(s.Quantization, s.KVCacheDtype, sku.GPU); why != "" {
		return nil, fmt.Errorf("%s", why)
	}
	m := fit.Model{Name: card.Name, ParametersB: card.ParametersB, Dtype: fit.DefaultDtype, Quantization: s.Quantization, KVCacheDtype: s.KVCacheDtype,
		TensorParallel: s.TensorParallel, GPUMemoryUtilization: fit.DefaultUtilization, MaxModelLen: s.Prompt + s.Output,
		Concurrency: s.Concurrency, MaxReplicas: 1, Shape: card.Shape}
	pool := gpupool.NewFacts(gpupool.Spec{Name: sku.Name, MaxNodes: 1}, sku, nil)
	mem := fit.Sizing(m, pool, s.TensorParallel)
	d := NewDeployment(card, m, sku, s.TensorParallel)
	l := d.Under(s.Concurrency, s.Prompt, s.Output)
	uncovered := Calibrated.Uncovered(card, sku.GPU)
	decode, rate := Bands[DecodeRegime(s.Concurrency)], Bands[Throughput]
	e := &Evaluation{
		Model: card.Name, SKU: sku.Name, GPU: sku.GPU.Model, TensorParallel: s.TensorParallel, Concurrency: s.Concurrency,
		Prompt: s.Prompt, Output: s.Output, Quantization: s.Quantization, KVCacheDtype: s.KVCacheDtype,
		TPOTMs: round1(l.ITL * 1000), ITLMs: round1(l.ITL * 1000), TTFTMs: round1(l.TTFT * 1000), E2EMs: round1(l.E2E * 1000),
		TokensPerSecondPerReplica: round1(l.TokensPerSecond), TokensPerSecondPerGPU: round1(l.TokensPerSecond / float64(s.TensorParallel)),
		KVCacheTokens: mem.KVTokens(), Fits: mem.Fits(), Calibrated: len(uncovered) == 0, Uncovered: uncovered,
		Ranges: map[string][2]float64{
			"tpotMs": decode.Range(l.ITL * 1000), "ttftMs": TTFTRangeMs(d, s.Concurrency, s.Prompt, l.TTFT),
			// a rate's band is a time's inverted: the slow end is the low rate
			"outputTokensPerSecondPerReplica": {round1(l.TokensPerSecond / rate.Pessimistic), round1(l.TokensPerSecond / rate.Optimistic)},
		},
	}
	if !e.Fits {
		e.FitProblem = fmt.Sprintf("%d streams of %d tokens need %.1f GiB per GPU, %.1f GiB there (KV cache for %d tokens)",
			s.Concurrency, s.Prompt+s.Output, mem.NeedGiB(), mem.BudgetGiB(), mem.KVTokens())
	}
	return e, nil
}

// checkPrecision checks a quantization and a KV cache dtype as given
// (flag prefixes the names the problem gives: "--" for a command's flags).
func checkPrecision(flag, quant, kv string) error {
	if _, known := fit.Quantizations[quant]; quant != "" && !known {
		return fmt.Errorf("%squantization: must be one of %s, got %q", flag, strings.Join(fit.QuantizationNames(), ", "), quant)
	}
	if kv != "" && !slices.Contains(fit.KVCacheDtypes, kv) {
		return fmt.Errorf("%skv-cache-dtype: must be one of %s, got %q", flag, strings.Join(fit.KVCacheDtypes, ", "), kv)
	}
	return nil
}

// precisionMisfit is why a GPU does not run a quantization or KV cache
// dtype, as vLLM would refuse it; "" when it does.
func precisionMisfit(quant, kv string, g catalog.GPU) string {
	return cmp.Or(fit.QuantizationMisfit(quant, g.Model, g.ComputeCapability), fit.KVCacheDtypeMisfit(kv, g.Model, g.ComputeCapability))
}
