package fit

import (
	"fmt"
	"slices"
	"strings"
)

// vLLM's own defaults for --dtype and --gpu-memory-utilization
// (vllm/engine/arg_utils.py, EngineArgs, at v0.11.0).
const (
	DefaultDtype       = "auto"
	DefaultUtilization = 0.9
)

// Dtypes are the values vLLM's --dtype accepts: ModelDType in
// vllm/config/model.py at v0.11.0 (the pinned image), which the argument
// parser turns into the flag's choices. It is the activation (and, without
// quantization, the weight) type; a quantized width is a quantization.
var Dtypes = []string{"auto", "half", "float16", "bfloat16", "float", "float32"}

// dtypeBytes is the weight width of an unquantized model per dtype; "auto"
// takes the checkpoint's own type, 16-bit for the models we serve.
var dtypeBytes = map[string]float64{"auto": 2, "half": 2, "float16": 2, "bfloat16": 2, "float": 4, "float32": 4}

// Quantization is one method vLLM serves (its --quantization), as the
// program knows it: the weight width that sizes memory, and the GPUs that
// run it.
type Quantization struct {
	// BytesPerParameter is the stored weight width.
	BytesPerParameter float64
	// MinCapability is the lowest compute capability (80: 8.0) that runs
	// the method: the method's get_min_capability() in
	// vllm/model_executor/layers/quantization/ at v0.11.0, except fp8,
	// which below 8.9 falls back to weight-only Marlin kernels (fp8.py:
	// use_marlin when not has_device_capability(89)) without FP8 compute.
	MinCapability int
	// ActDtypes are the activation dtypes the method's kernels take
	// (get_supported_act_dtypes); nil: any.
	ActDtypes []string
	// Online: vLLM can apply the method to a 16-bit checkpoint as it
	// loads it, so the engine must be told (--quantization). The other
	// methods exist only in a checkpoint, whose quantization_config vLLM
	// reads; the flag is left out for them, since vLLM then picks the
	// kernel the checkpoint allows (Marlin where it can, the method's own
	// kernels where it cannot), while a flag that names a kernel the
	// checkpoint cannot use stops the engine (vllm v0.11.0
	// vllm/config/model.py _verify_quantization; gptq_marlin.py and
	// awq_marlin.py override_quantization_method).
	Online bool
	// About says what the method is, for messages and the README.
	About string
}

// Quantizations are the methods the program serves; each is one of the
// choices of vLLM's --quantization (QuantizationMethods in
// vllm/model_executor/layers/quantization/__init__.py at v0.11.0).
var Quantizations = map[string]Quantization{
	"fp8": {BytesPerParameter: 1, MinCapability: 89, Online: true,
		About: "FP8 weights and compute, online from a 16-bit checkpoint or an FP8 checkpoint: Ada (8.9) or Hopper (9.0) GPUs"},
	"awq": {BytesPerParameter: 0.5, MinCapability: 75, ActDtypes: []string{"auto", "half", "float16"},
		About: "a 4-bit AWQ checkpoint"},
	"gptq": {BytesPerParameter: 0.5, MinCapability: 60, ActDtypes: []string{"auto", "half", "float16"},
		About: "a 4-bit GPTQ checkpoint (set weightsGB for 8-bit ones)"},
	"compressed-tensors": {BytesPerParameter: 1, MinCapability: 70,
		About: "an llm-compressor checkpoint, W8A8 int8 or fp8 (set weightsGB for 4-bit ones)"},
	"bitsandbytes": {BytesPerParameter: 0.5, MinCapability: 70, Online: true,
		About: "a 4-bit bitsandbytes checkpoint"},
}

// QuantizationNames lists the methods in order.
func QuantizationNames() []string {
	out := make([]string, 0, len(Quantizations))
	for k := range Quantizations {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// LegacyDtypes were dtypes before quantization had a key of its own: vLLM
// refuses them as --dtype, so a stack that still says so is told what to
// write instead.
var LegacyDtypes = map[string]string{
	"fp8":  "quantization: fp8 (and dtype: auto)",
	"int8": "quantization: compressed-tensors for a W8A8 checkpoint, or gptq with weightsGB for an 8-bit GPTQ one (and dtype: auto)",
	"int4": "quantization: awq or gptq for a 4-bit checkpoint (and dtype: auto)",
}

// BytesPerParameter is the stored width of one weight.
func (m Model) BytesPerParameter() float64 {
	if q, ok := Quantizations[m.Quantization]; ok {
		return q.BytesPerParameter
	}
	return dtypeBytes[m.Dtype]
}

// Capability formats a compute capability (89: "8.9").
func Capability(c int) string { return fmt.Sprintf("%d.%d", c/10, c%10) }

// QuantizationMisfit is why a GPU (its model name and compute capability)
// cannot run a method, "" when it can.
func QuantizationMisfit(method string, gpu string, cc int) string {
	q, ok := Quantizations[method]
	if !ok || cc >= q.MinCapability {
		return ""
	}
	msg := fmt.Sprintf("%s needs compute capability %s or newer, the pool's %s has %s", method, Capability(q.MinCapability), gpu, Capability(cc))
	if method == "fp8" {
		msg += "; vLLM would fall back to weight-only FP8 kernels there without FP8 compute: use awq or gptq (4-bit), or no quantization"
	}
	return msg
}

// ActDtypeMisfit is why a method refuses an activation dtype, "" if not.
func ActDtypeMisfit(method, dtype string) string {
	q, ok := Quantizations[method]
	if !ok || q.ActDtypes == nil || slices.Contains(q.ActDtypes, dtype) {
		return ""
	}
	return fmt.Sprintf("%s kernels take %s activations only: set dtype to one of them", method, strings.Join(q.ActDtypes, ", "))
}

// KVCacheDtypes are the values of vLLM's --kv-cache-dtype the model key
// kvCacheDtype takes: auto (the model's dtype) or fp8 (one byte per
// element: half the KV cache of a 16-bit model).
var KVCacheDtypes = []string{"auto", "fp8"}

// FP8KVCapability is the compute capability an fp8 KV cache needs on
// vLLM's default attention backends: FlashAttention 3 (Hopper) and
// FlashMLA run attention on an fp8 cache; on older GPUs
// CudaPlatformBase.is_kv_cache_dtype_supported refuses it
// (vllm/platforms/cuda.py and vllm/attention/utils/fa_utils.py's
// flash_attn_supports_fp8, v0.10 series).
const FP8KVCapability = 90

// KVCacheDtypeMisfit is why a pool's GPU refuses a KV cache dtype, "" if
// it takes it.
func KVCacheDtypeMisfit(dtype, gpu string, cc int) string {
	if dtype != "fp8" || cc >= FP8KVCapability {
		return ""
	}
	return fmt.Sprintf("an fp8 KV cache needs compute capability %s or newer (FlashAttention 3), the pool's %s has %s: vLLM refuses --kv-cache-dtype fp8 there; use auto",
		Capability(FP8KVCapability), gpu, Capability(cc))
}
