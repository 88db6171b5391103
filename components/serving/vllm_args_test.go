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
		// a checkpoint's own method is read from it, the flag left out
		// (TestVLLMRunsEachCheckpointOnItsBestKernel); fp8 and
		// bitsandbytes can also quantize a 16-bit checkpoint as it loads
		if q != "fp8" && q != "bitsandbytes" {
			cases[len(cases)-1].want.quantization = ""
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

// checkpointQuant is the quantization_config of a checkpoint's
// config.json, as far as vLLM's kernel choice reads it ("" method: a 16-bit
// checkpoint).
type checkpointQuant struct {
	method    string
	bits      int
	sym       bool // GPTQ
	groupSize int
}

// vllmQuantization is the method vLLM v0.11.0 runs a checkpoint with,
// given the --quantization it is passed ("" for none), or the error it
// stops with. vllm/config/model.py _verify_quantization asks each
// override method in turn; gptq_marlin.py and awq_marlin.py claim the
// checkpoint when it is Marlin-compatible (GPTQ: 4 or 8 bits, symmetric;
// AWQ: 4 or 8 bits; group size -1, 32, 64 or 128, marlin_utils.py
// MARLIN_SUPPORTED_GROUP_SIZES; compute capability 8.0 or more,
// get_min_capability) and the flag leaves the choice open (none,
// "marlin", or the Marlin name). A flag that still differs from the
// checkpoint's method then raises "Quantization method specified in the
// model config (...) does not match the quantization method specified in
// the `quantization` argument (...)". A 16-bit checkpoint takes only the
// methods that quantize as they load (fp8, bitsandbytes); any other
// finds no quantization config to read.
func vllmQuantization(ckpt checkpointQuant, flag string, capability int) (string, error) {
	if ckpt.method == "" {
		if flag == "" || flag == "fp8" || flag == "bitsandbytes" {
			return flag, nil
		}
		return "", fmt.Errorf("cannot find the config file for %s", flag)
	}
	marlinGroup := slices.Contains([]int{-1, 32, 64, 128}, ckpt.groupSize)
	method := ckpt.method
	for _, o := range []struct {
		name       string
		compatible bool
	}{
		{"gptq_marlin", ckpt.method == "gptq" && (ckpt.bits == 4 || ckpt.bits == 8) && ckpt.sym && marlinGroup && capability >= 80},
		{"awq_marlin", ckpt.method == "awq" && (ckpt.bits == 4 || ckpt.bits == 8) && marlinGroup && capability >= 80},
	} {
		if o.compatible && (flag == "" || flag == "marlin" || flag == o.name) {
			method = o.name
			flag = o.name
			break
		}
	}
	if flag != "" && flag != method {
		return "", fmt.Errorf("quantization method specified in the model config (%s) does not match the quantization method specified in the `quantization` argument (%s)", method, flag)
	}
	return method, nil
}

// Each kind of checkpoint a model's quantization key stands for starts,
// on each GPU generation, and runs on the fastest kernel vLLM has for it:
// the Marlin kernels where the checkpoint and GPU allow them, as the
// planner's speeds assume, and the method's own kernels where not. The
// flag the program once wrote (awq_marlin, gptq_marlin) stopped the engine
// on checkpoints Marlin cannot run; the bare method name forced the slow
// kernels.
func TestVLLMRunsEachCheckpointOnItsBestKernel(t *testing.T) {
	t.Parallel()
	o := serving.Options{}.Defaults("cephfs", serving.Cilium)
	pools := []struct {
		sku        string
		pool       gpupool.Facts
		capability int
	}{
		{"h100-80gb-x8", pooltest.Resolved(t, pooltest.Natron, gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 2}).Facts, 90},
		{"Standard_NC24ads_A100_v4", pooltest.Resolved(t, pooltest.AKS, gpupool.Spec{Name: "infer", SKU: "Standard_NC24ads_A100_v4", MaxNodes: 2}).Facts, 80},
		{"Standard_NC4as_T4_v3", pooltest.Resolved(t, pooltest.AKS, gpupool.Spec{Name: "infer", SKU: "Standard_NC4as_T4_v3", MaxNodes: 2}).Facts, 75},
	}
	for _, tc := range []struct {
		name         string
		quantization string // the model's key
		ckpt         checkpointQuant
		// the method vLLM should run, on GPUs with Marlin (8.0+) and without
		marlin, older string
	}{
		{"gptq 4-bit symmetric", "gptq", checkpointQuant{"gptq", 4, true, 128}, "gptq_marlin", "gptq"},
		{"gptq 8-bit symmetric", "gptq", checkpointQuant{"gptq", 8, true, 128}, "gptq_marlin", "gptq"},
		{"gptq 4-bit asymmetric", "gptq", checkpointQuant{"gptq", 4, false, 128}, "gptq", "gptq"},
		{"gptq 3-bit", "gptq", checkpointQuant{"gptq", 3, true, 128}, "gptq", "gptq"},
		{"gptq 2-bit", "gptq", checkpointQuant{"gptq", 2, true, 64}, "gptq", "gptq"},
		{"gptq 4-bit group 256", "gptq", checkpointQuant{"gptq", 4, true, 256}, "gptq", "gptq"},
		{"awq 4-bit", "awq", checkpointQuant{"awq", 4, false, 128}, "awq_marlin", "awq"},
		{"llm-compressor W4A16", "compressed-tensors", checkpointQuant{"compressed-tensors", 4, true, 128}, "compressed-tensors", "compressed-tensors"},
		{"llm-compressor W8A8", "compressed-tensors", checkpointQuant{"compressed-tensors", 8, true, -1}, "compressed-tensors", "compressed-tensors"},
		{"fp8 checkpoint", "fp8", checkpointQuant{"fp8", 8, true, -1}, "fp8", "fp8"},
		{"fp8 from a 16-bit checkpoint", "fp8", checkpointQuant{}, "fp8", "fp8"},
		{"bitsandbytes checkpoint", "bitsandbytes", checkpointQuant{"bitsandbytes", 4, true, -1}, "bitsandbytes", "bitsandbytes"},
		{"bitsandbytes from a 16-bit checkpoint", "bitsandbytes", checkpointQuant{}, "bitsandbytes", "bitsandbytes"},
	} {
		for _, p := range pools {
			if p.pool.ComputeCapability != p.capability {
				t.Fatalf("%s: compute capability %d, want %d", p.sku, p.pool.ComputeCapability, p.capability)
			}
			if fit.QuantizationMisfit(tc.quantization, p.sku, p.capability) != "" {
				continue // the planner refuses the pool
			}
			t.Run(tc.name+"/"+p.sku, func(t *testing.T) {
				t.Parallel()
				m := serving.ModelSpec{Name: "m", Source: "s3://b/m", ParametersB: 8, Quantization: tc.quantization, TensorParallel: 1,
					MaxModelLen: 2048, MinReplicas: new(1), MaxReplicas: 1}
				flag := ""
				extra := get(serving.VLLMValues(serving.NewEngine(m, p.pool, o, nil, "")), "servingEngineSpec", "modelSpec").([]any)[0].(map[string]any)["vllmConfig"].(map[string]any)["extraArgs"].([]any)
				for i := 0; i+1 < len(extra); i++ {
					if extra[i] == "--quantization" {
						flag = extra[i+1].(string)
					}
				}
				want := tc.older
				if p.capability >= 80 {
					want = tc.marlin
				}
				got, err := vllmQuantization(tc.ckpt, flag, p.capability)
				if err != nil {
					t.Fatalf("--quantization %q: vLLM stops: %v", flag, err)
				}
				if got != want {
					t.Errorf("--quantization %q: vLLM runs %s, not %s", flag, got, want)
				}
			})
		}
	}
}

// The model of vLLM's choice above can fail: the flags the program once
// wrote stop it or slow it, as vLLM's own sources say they do.
func TestVLLMQuantizationModelRefuses(t *testing.T) {
	t.Parallel()
	asym := checkpointQuant{"gptq", 4, false, 128}
	if _, err := vllmQuantization(asym, "gptq_marlin", 90); err == nil {
		t.Error("gptq_marlin on an asymmetric GPTQ checkpoint started")
	}
	if _, err := vllmQuantization(checkpointQuant{"compressed-tensors", 4, true, 128}, "gptq_marlin", 90); err == nil {
		t.Error("gptq_marlin on a compressed-tensors checkpoint started")
	}
	if got, _ := vllmQuantization(checkpointQuant{"awq", 4, false, 128}, "awq", 90); got != "awq" {
		t.Errorf("--quantization awq ran %s, vLLM forces the slow awq kernels", got)
	}
	if _, err := vllmQuantization(checkpointQuant{}, "awq", 90); err == nil {
		t.Error("awq on a 16-bit checkpoint started")
	}
}
