package serving_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
)

// vllmFlag is one option of `vllm serve` as vLLM v0.11.0 (the pinned image,
// serving.DefaultImage) declares it: EngineArgs.add_cli_args in
// vllm/engine/arg_utils.py builds each flag from its config dataclass field,
// a Literal type becoming the flag's choices and an optional bool an
// argparse BooleanOptionalAction (--x and --no-x).
type vllmFlag struct {
	kind    string // "str", "int", "float", "bool", "choice"
	choices []string
}

// vllmServeFlags are the options the chart can write.
var vllmServeFlags = map[string]vllmFlag{
	"--host": {kind: "str"},
	"--port": {kind: "int"},
	// ModelDType, vllm/config/model.py
	"--dtype":         {kind: "choice", choices: []string{"auto", "half", "float16", "bfloat16", "float", "float32"}},
	"--max-model-len": {kind: "int"},
	// ModelConfig.served_model_name (nargs "+": we pass one name)
	"--served-model-name":      {kind: "str"},
	"--tensor-parallel-size":   {kind: "int"},
	"--gpu-memory-utilization": {kind: "float"},
	"--max-num-seqs":           {kind: "int"},
	"--enable-prefix-caching":  {kind: "bool"},
	"--enable-chunked-prefill": {kind: "bool"},
	"--enable-lora":            {kind: "bool"},
	// ModelConfig.trust_remote_code
	"--trust-remote-code": {kind: "bool"},
	// CacheDType, vllm/config/cache.py
	"--kv-cache-dtype": {kind: "choice", choices: []string{"auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"}},
	// QuantizationMethods, vllm/model_executor/layers/quantization/__init__.py
	"--quantization": {kind: "choice", choices: []string{"awq", "deepspeedfp", "tpu_int8", "fp8", "ptpc_fp8", "fbgemm_fp8",
		"modelopt", "modelopt_fp4", "bitblas", "gguf", "gptq_marlin_24", "gptq_marlin", "gptq_bitblas", "awq_marlin", "gptq",
		"compressed-tensors", "bitsandbytes", "hqq", "experts_int8", "ipex", "quark", "moe_wna16", "torchao", "auto-round",
		"rtn", "inc", "mxfp4", "petit_nvfp4"}},
}

// parseVLLMServe parses a container command as `vllm serve` would:
// FlexibleArgumentParser (vllm/utils/__init__.py) turns underscores in
// option names into dashes, then argparse applies each flag's type and
// choices; an unknown option or a value outside the choices exits 2, and
// the pod crash-loops.
func parseVLLMServe(cmd []string) (map[string]string, error) {
	if len(cmd) < 3 || cmd[0] != "vllm" || cmd[1] != "serve" || strings.HasPrefix(cmd[2], "-") {
		return nil, fmt.Errorf("want vllm serve <model> ..., got %v", cmd)
	}
	got := map[string]string{"model": cmd[2]}
	for i := 3; i < len(cmd); i++ {
		name, value, hasValue := strings.Cut(cmd[i], "=")
		if !strings.HasPrefix(name, "--") {
			return nil, fmt.Errorf("unrecognized argument %q", cmd[i])
		}
		name = "--" + strings.ReplaceAll(name[2:], "_", "-")
		if base, negated := strings.CutPrefix(name, "--no-"); negated {
			if f, ok := vllmServeFlags["--"+base]; ok && f.kind == "bool" {
				got["--"+base] = "false"
				continue
			}
		}
		f, ok := vllmServeFlags[name]
		if !ok {
			return nil, fmt.Errorf("unrecognized argument %s", name)
		}
		if f.kind == "bool" {
			got[name] = "true"
			continue
		}
		if !hasValue {
			if i+1 >= len(cmd) {
				return nil, fmt.Errorf("argument %s: expected one argument", name)
			}
			i++
			value = cmd[i]
		}
		var err error
		switch f.kind {
		case "int":
			_, err = strconv.Atoi(value)
		case "float":
			_, err = strconv.ParseFloat(value, 64)
		case "choice":
			if !slices.Contains(f.choices, value) {
				err = fmt.Errorf("invalid choice: %q (choose from %s)", value, strings.Join(f.choices, ", "))
			}
		}
		if err != nil {
			return nil, fmt.Errorf("argument %s: %w", name, err)
		}
		got[name] = value
	}
	return got, nil
}

// Every dtype and quantization the config contract accepts renders, through
// the real chart, into a command vLLM's parser takes, with the flags it
// means and none that switch a vLLM default off.
func TestVLLMParsesTheEngineCommand(t *testing.T) {
	t.Parallel()
	h100 := pooltest.Resolved(t, pooltest.Natron, gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 2}).Facts
	sliced := pooltest.Resolved(t, pooltest.AKS, gpupool.Spec{Name: "shared", SKU: "Standard_NC24ads_A100_v4", MaxNodes: 2, TimeSlicing: 2}).Facts
	o := serving.Options{}.Defaults("cephfs", serving.Cilium)
	type want struct{ dtype, quantization, util, kvCache string }
	var cases []struct {
		m    serving.ModelSpec
		pool gpupool.Facts
		want want
	}
	add := func(dtype, q string, p gpupool.Facts, util string) {
		cases = append(cases, struct {
			m    serving.ModelSpec
			pool gpupool.Facts
			want want
		}{serving.ModelSpec{Name: "m", Source: "s3://b/m", ParametersB: 8, Dtype: dtype, Quantization: q, TensorParallel: 1,
			MaxModelLen: 8192, GPUMemoryUtilization: 0.9, MinReplicas: new(1), MaxReplicas: 2, QueueDepthTarget: 5}, p, want{dtype, q, util, ""}})
	}
	for _, d := range fit.Dtypes {
		add(d, "", h100, "0.9")
	}
	for _, q := range fit.QuantizationNames() {
		add("auto", q, h100, "0.9")
		if q == "awq" || q == "gptq" { // on the Marlin kernels (TestQuantizedModelsRunOnMarlin)
			cases[len(cases)-1].want.quantization = q + "_marlin"
		}
	}
	add("bfloat16", "", sliced, "0.45")
	for _, kv := range fit.KVCacheDtypes {
		add("auto", "", h100, "0.9")
		cases[len(cases)-1].m.KVCacheDtype = kv
		if kv == "fp8" { // auto is vLLM's default: no flag written
			cases[len(cases)-1].want.kvCache = kv
		}
	}
	add("auto", "", h100, "0.9") // a model that trusts its (pinned) code
	cases[len(cases)-1].m.TrustRemoteCode = true
	cases[len(cases)-1].m.Checksums = &serving.Checksums{SHA256: strings.Repeat("ab", 32)}
	for _, tc := range cases {
		t.Run(tc.want.dtype+"/"+tc.want.quantization+"/"+tc.m.KVCacheDtype+"/"+tc.pool.Name+fmt.Sprint("/trust=", tc.m.TrustRemoteCode), func(t *testing.T) {
			t.Parallel()
			if errs := tc.m.Validate(nil, serving.S3); len(errs) != 0 {
				t.Fatalf("the config contract refuses %+v: %v", tc.m, errs)
			}
			if errs := fit.Fit(nil, tc.m.Model(), tc.pool); len(errs) != 0 {
				t.Fatalf("does not fit: %v", errs)
			}
			e := serving.NewEngine(tc.m, tc.pool, o, nil, "")
			var cmd []string
			for _, obj := range renderEngine(t, e) {
				if obj["kind"] == "Deployment" {
					for _, a := range get(obj, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["command"].([]any) {
						cmd = append(cmd, fmt.Sprint(a))
					}
				}
			}
			got, err := parseVLLMServe(cmd)
			if err != nil {
				t.Fatalf("vLLM refuses %v: %v", cmd, err)
			}
			if got["--dtype"] != tc.want.dtype || got["--quantization"] != tc.want.quantization || got["--gpu-memory-utilization"] != tc.want.util ||
				got["--kv-cache-dtype"] != tc.want.kvCache {
				t.Errorf("dtype %q quantization %q utilization %q, want %+v", got["--dtype"], got["--quantization"], got["--gpu-memory-utilization"], tc.want)
			}
			if got["--enable-prefix-caching"] == "false" {
				t.Errorf("%v switches prefix caching off, a vLLM default", cmd)
			}
			if (got["--trust-remote-code"] == "true") != tc.m.TrustRemoteCode {
				t.Errorf("--trust-remote-code %q for trustRemoteCode %v", got["--trust-remote-code"], tc.m.TrustRemoteCode)
			}
			if got["--host"] != serving.EngineHost || got["--port"] != fmt.Sprint(serving.EnginePort) {
				t.Errorf("vLLM listens on %s:%s, want loopback %s:%d behind the proxy", got["--host"], got["--port"], serving.EngineHost, serving.EnginePort)
			}
		})
	}
}

// What the parser refuses, so that the test above can fail: the dtypes the
// old contract passed straight through, and misspellings.
func TestVLLMParserRefuses(t *testing.T) {
	t.Parallel()
	for _, bad := range [][]string{
		{"vllm", "serve", "/models/m", "--dtype", "fp8"},
		{"vllm", "serve", "/models/m", "--dtype", "int4"},
		{"vllm", "serve", "/models/m", "--quantization", "int8"},
		{"vllm", "serve", "/models/m", "--tensor-parallel-size", "two"},
		{"vllm", "serve", "/models/m", "--max-model-length", "8192"},
	} {
		if _, err := parseVLLMServe(bad); err == nil {
			t.Errorf("%v parsed", bad)
		}
	}
	if got, err := parseVLLMServe([]string{"vllm", "serve", "/models/m", "--gpu_memory_utilization", "0.5", "--no-enable-prefix-caching"}); err != nil ||
		got["--gpu-memory-utilization"] != "0.5" || got["--enable-prefix-caching"] != "false" {
		t.Errorf("underscores and --no- flags: %v, %v", got, err)
	}
}

// The kernel vLLM v0.11.0 runs an AWQ or GPTQ checkpoint with, given the
// --quantization it is passed: the Marlin kernels when the flag leaves the
// choice open (none, marlin, or the marlin name) and the GPU has compute
// capability 8.0 or more; the slow kernels when the flag names awq or gptq
// itself (vllm/model_executor/layers/quantization/awq_marlin.py and
// gptq_marlin.py, override_quantization_method and get_min_capability).
func vllmKernel(method, flag string, capability int) string {
	marlin := method + "_marlin"
	if capability >= 80 && (flag == "" || flag == "marlin" || flag == marlin) {
		return marlin
	}
	return method
}

// An AWQ or GPTQ model runs on the Marlin kernels wherever the GPU has
// them, as the planner's speeds assume: passing --quantization awq (or
// gptq) explicitly forced the slow kernels.
func TestQuantizedModelsRunOnMarlin(t *testing.T) {
	t.Parallel()
	o := serving.Options{}.Defaults("cephfs", serving.Cilium)
	for _, tc := range []struct {
		sku        string
		pool       gpupool.Facts
		capability int
	}{
		{"h100-80gb-x8", pooltest.Resolved(t, pooltest.Natron, gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 2}).Facts, 90},
		{"Standard_NC24ads_A100_v4", pooltest.Resolved(t, pooltest.AKS, gpupool.Spec{Name: "infer", SKU: "Standard_NC24ads_A100_v4", MaxNodes: 2}).Facts, 80},
		{"Standard_NC4as_T4_v3", pooltest.Resolved(t, pooltest.AKS, gpupool.Spec{Name: "infer", SKU: "Standard_NC4as_T4_v3", MaxNodes: 2}).Facts, 75},
	} {
		pool := tc.pool
		if pool.ComputeCapability != tc.capability {
			t.Fatalf("%s: compute capability %d, want %d", tc.sku, pool.ComputeCapability, tc.capability)
		}
		for _, method := range []string{"awq", "gptq"} {
			m := serving.ModelSpec{Name: "m", Source: "s3://b/m", ParametersB: 8, Quantization: method, TensorParallel: 1,
				MaxModelLen: 2048, MinReplicas: new(1), MaxReplicas: 1}
			e := serving.NewEngine(m, pool, o, nil, "")
			flag := ""
			extra := get(serving.VLLMValues(e), "servingEngineSpec", "modelSpec").([]any)[0].(map[string]any)["vllmConfig"].(map[string]any)["extraArgs"].([]any)
			for i := 0; i+1 < len(extra); i++ {
				if extra[i] == "--quantization" {
					flag = extra[i+1].(string)
				}
			}
			if got, best := vllmKernel(method, flag, tc.capability), vllmKernel(method, "", tc.capability); got != best {
				t.Errorf("%s on %s (compute capability %d): --quantization %q makes vLLM run %s, not %s", method, tc.sku, tc.capability, flag, got, best)
			}
		}
	}
}
