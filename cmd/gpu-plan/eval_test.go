package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/models"
	"github.com/natron/gpu-node-pools/internal/sizing"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// gpu-plan eval prints, as JSON, the fields tooling reads: every one
// present, each the throughput model's figure for the setup, for a
// catalog model and for a config.json alike.
func TestEvalJSON(t *testing.T) {
	t.Parallel()
	config := filepath.Join("..", "..", "internal", "models", "testdata", "mixtral-8x7b", "config.json")
	for _, tc := range []struct {
		args  string
		model string
		setup sizing.Setup
	}{
		{"--model llama-3.1-70b --profile h100-80gb-x8 --tp 4 --concurrency 16 --prompt 2048 --output 256 --kv-cache-dtype fp8", "llama-3.1-70b",
			sizing.Setup{TensorParallel: 4, Concurrency: 16, Prompt: 2048, Output: 256, KVCacheDtype: "fp8"}},
		{"--model " + config + " --profile h100-80gb-x8 --tp 2 --concurrency 8 --prompt 512 --output 128 --quantization fp8", config,
			sizing.Setup{TensorParallel: 2, Concurrency: 8, Prompt: 512, Output: 128, Quantization: "fp8"}},
	} {
		var out bytes.Buffer
		if err := run(append([]string{"eval"}, append(strings.Fields(tc.args), "--format", "json")...), &out, nil); err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		var fields map[string]any
		if err := json.Unmarshal(out.Bytes(), &fields); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"tpotMs", "itlMs", "ttftMs", "e2eLatencyMs", "outputTokensPerSecondPerReplica", "outputTokensPerSecondPerGPU", "fits", "kvCacheTokens"} {
			if _, ok := fields[k]; !ok {
				t.Errorf("%s: no %s in %s", tc.args, k, out.String())
			}
		}
		card, err := models.Resolve(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		sku, _ := natron.Profiles.SKU(nil, "h100-80gb-x8")
		want, err := sizing.Evaluate(card, sku, tc.setup)
		if err != nil {
			t.Fatal(err)
		}
		var got sizing.Evaluation
		_ = json.Unmarshal(out.Bytes(), &got)
		if got.TPOTMs != want.TPOTMs || got.TTFTMs != want.TTFTMs || got.E2EMs != want.E2EMs || got.KVCacheTokens != want.KVCacheTokens ||
			got.TokensPerSecondPerGPU*float64(got.TensorParallel) < got.TokensPerSecondPerReplica-1 || !got.Fits || got.TPOTMs <= 0 {
			t.Errorf("%s: %+v, want %+v", tc.args, got, want)
		}
	}
}

// What eval refuses, naming the flag.
func TestEvalRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ args, want string }{
		{"--model llama-3.1-8b --sku Standard_NC24ads_A100_v4 --kv-cache-dtype fp8", "an fp8 KV cache needs compute capability 9.0"},
		{"--model llama-3.1-8b --sku Standard_NC24ads_A100_v4 --profile h100-80gb-x8", "--sku and --profile: give one node shape, got both"},
		{"--model llama-3.1-8b --sku Standard_XYZ", `--sku: Invalid value: "Standard_XYZ": is no target's node shape; known: Standard_NC12s_v3`},
		{"--model llama-3.1-8b", "--sku or --profile: required"},
		{"--model llama-3.1-8b --profile h100-80gb-x8 --tp 3", "--tp: must divide the 8 GPUs of one h100-80gb-x8 node, got 3"},
		{"--model qwen2.5-7b --profile h100-80gb-x8 --tp 8", "--tp: vLLM refuses 8: the model's 28 attention heads do not divide by 8"},
		{"--model gpt-5 --profile h100-80gb-x8", `--model: "gpt-5" is neither a catalog model`},
		{"--model llama-3.1-8b --profile h100-80gb-x8 --kv-cache-dtype int8", "--kv-cache-dtype: must be one of auto, fp8"},
		{"--model llama-3.1-8b --profile h100-80gb-x8 --format yaml", "--format: must be table or json"},
	} {
		var out bytes.Buffer
		err := run(append([]string{"eval"}, strings.Fields(tc.args)...), &out, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// A model that does not fit says so, with the KV tokens it would leave.
func TestEvalMisfit(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(strings.Fields("eval --model llama-3.1-70b --profile h100-80gb-x8 --tp 1 --format json"), &out, nil); err != nil {
		t.Fatal(err)
	}
	var e sizing.Evaluation
	if err := json.Unmarshal(out.Bytes(), &e); err != nil || e.Fits || e.KVCacheTokens != 0 || !strings.Contains(e.FitProblem, "GiB per GPU") {
		t.Errorf("70B on one H100: %+v %v", e, err)
	}
}

// A setup outside the calibration says so, in JSON and in both tables:
// DeepSeek V3's MLA, which no measured model has; a measured kind on a
// fitted GPU says nothing.
func TestEvalAndPlanSayWhatIsUncalibrated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args       string
		calibrated bool
	}{
		{"eval --model deepseek-v3 --sku Standard_ND96isr_H200_v5 --tp 8 --concurrency 4", false},
		{"eval --model llama-3.1-70b --profile h100-80gb-x8 --tp 4 --concurrency 4", true},
	} {
		var js, table bytes.Buffer
		if err := run(append(strings.Fields(tc.args), "--format", "json"), &js, nil); err != nil {
			t.Fatal(err)
		}
		var got sizing.Evaluation
		if err := json.Unmarshal(js.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got.Calibrated != tc.calibrated || (len(got.Uncovered) == 0) != tc.calibrated {
			t.Errorf("%s: calibrated %v, uncovered %q; want calibrated %v and the reasons only when not", tc.args, got.Calibrated, got.Uncovered, tc.calibrated)
		}
		if err := run(strings.Fields(tc.args), &table, nil); err != nil {
			t.Fatal(err)
		}
		if says := strings.Contains(table.String(), "Outside the calibration") && strings.Contains(table.String(), "MLA attention"); says == tc.calibrated {
			t.Errorf("%s: the table says it is outside the calibration: %v\n%s", tc.args, says, table.String())
		}
	}
	var out bytes.Buffer
	if err := run(strings.Fields("--model deepseek-v3 --concurrency 8 --context 8192"), &out, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Outside the calibration (docs/sizing.md); there, figures and ranges rest on the model alone:\n  deepseek-v3's MLA attention") {
		t.Errorf("the plan does not say DeepSeek V3 is outside the calibration:\n%s", out.String())
	}
	out.Reset()
	if err := run(strings.Fields("--model deepseek-v3 --concurrency 8 --context 8192 --format yaml"), &out, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "# Outside the calibration (docs/sizing.md), so that figure rests on the model alone: deepseek-v3's MLA attention") {
		t.Errorf("the stack fragment does not say DeepSeek V3 is outside the calibration:\n%s", out.String())
	}
}
