package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/sizing"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// The planner's YAML, for a dozen requirement sets on both targets, loads
// through the program's own config loading with no error: the pool and
// the model it proposes pass every check the stack makes, the fit check
// included.
func TestPlannedYAMLLoads(t *testing.T) {
	t.Parallel()
	for _, args := range []string{
		"--model llama-3.1-8b --context 8192 --concurrency 8 --tpot-ms 40 --region eastus",
		"--model llama-3.1-8b --concurrency 4 --tpot-ms 60 --region eastus",
		"--model llama-3.1-70b --context 8192 --concurrency 32 --tpot-ms 50 --region eastus",
		"--model llama-3.1-70b --context 32768 --concurrency 4 --tpot-ms 30 --region westeurope",
		"--model llama-3.1-70b --context 8192 --concurrency 16 --tpot-ms 50 --quantization fp8 --region eastus",
		"--model llama-3.3-70b --context 16384 --concurrency 64 --tpot-ms 60 --region eastus --spot",
		"--model llama-3.2-1b --context 4096 --concurrency 100 --tpot-ms 30 --region swedencentral",
		"--model qwen2.5-7b --context 32768 --concurrency 16 --tpot-ms 50 --region germanywestcentral",
		"--model mistral-7b --context 8192 --concurrency 2 --tpot-ms 100 --region eastus --quantization awq",
		"--model mixtral-8x7b --context 16384 --concurrency 16 --tpot-ms 60 --region eastus",
		"--model gemma-2-27b --concurrency 8 --tpot-ms 60 --region eastus",
		"--model deepseek-r1-distill-llama-70b --context 8192 --concurrency 8 --tpot-ms 50 --region eastus",
		"--model qwen3-32b --context 16384 --concurrency 12 --tpot-ms 50 --target natron --price h100-80gb-x8=20 --price a100-80gb-x8=11",
		"--model llama-3.1-405b --context 8192 --concurrency 4 --tpot-ms 80 --quantization fp8 --target natron",
		// a model outside the catalog, by its config.json (testdata/acme-moe: Mixtral's), with an fp8 KV cache
		"--model testdata/acme-moe --context 8192 --concurrency 8 --tpot-ms 60 --region eastus --kv-cache-dtype fp8",
	} {
		t.Run(args, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			if err := run(append(strings.Fields(args), "--format", "yaml"), &out, nil); err != nil {
				t.Fatalf("gpu-plan %s: %v", args, err)
			}
			if !strings.HasPrefix(out.String(), "# ") {
				t.Errorf("no summary line:\n%s", out.String())
			}
			// keys to go under a stack file's config:, with no header of their own
			var file map[string]any
			if err := yaml.Unmarshal(out.Bytes(), &file); err != nil || strings.Contains(out.String(), "\nconfig:") {
				t.Fatalf("%v\n%s", err, out.String())
			}
			c := stacktest.AKS()
			storage := map[string]any{"account": "acmemodels", "clientId": "9a4d1c9e-3b6f-4d5a-8f2e-1c7b5e0d4a21", "identityName": "acme-models-reader"}
			c["serving"] = map[string]any{"downloadCIDRs": []any{"10.40.8.0/24"}}
			wantPricing := map[string]any{"region": "eastus"}
			if strings.Contains(args, "natron") {
				c = stacktest.Natron()
				storage = map[string]any{"endpoint": "https://s3.example", "accessKey": "ak", "secretKey": "sk"}
				wantPricing = map[string]any{}
				if strings.Contains(args, "--price") {
					wantPricing = map[string]any{"prices": map[string]any{"h100-80gb-x8": 20.0, "a100-80gb-x8": 11.0}}
				}
			} else if i := strings.Index(args, "--region "); i >= 0 {
				wantPricing["region"] = strings.Fields(args[i:])[1]
			}
			got, _ := file[config.Key("pricing")].(map[string]any)
			if got == nil {
				got = map[string]any{}
			}
			if diff := cmp.Diff(wantPricing, got); diff != "" {
				t.Errorf("pricing block (-want +got):\n%s", diff)
			}
			for k, v := range file {
				k = strings.TrimPrefix(k, config.Namespace+":")
				if k == "storage" { // the planner names the kind; the customer's store the rest
					maps.Copy(storage, v.(map[string]any))
					v = storage
				}
				c[k] = v
			}
			model, pool := stacktest.Model(c), stacktest.Pool(c, len(c["pools"].([]any))-1)
			if model["minReplicas"].(float64) >= 1 && pool["minNodes"].(float64) < 1 {
				t.Errorf("a model that stays up on a pool that scales to zero:\n%s", out.String())
			}
			if _, err := plan.Load(stacktest.Encode(t, c), "acme"); err != nil {
				t.Errorf("the planned stack does not load: %v\n%s", err, out.String())
			}
		})
	}
}

// The table lists designs and the shapes left out, JSON carries the same
// designs for tooling, and requirements nothing meets fail naming the
// requirement and the closest design.
func TestFormats(t *testing.T) {
	t.Parallel()
	args := strings.Fields("--model llama-3.1-70b --context 8192 --concurrency 32 --tpot-ms 50 --region eastus")
	var table, js bytes.Buffer
	if err := run(args, &table, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"llama-3.1-70b at 8192 tokens of context", "Standard_NC96ads_A100_v4", "Not feasible:", "Standard_NC4as_T4_v3: tensorParallel 1: one sequence"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := run(append(args, "--format", "json"), &js, nil); err != nil {
		t.Fatal(err)
	}
	var res sizing.Result
	if err := json.Unmarshal(js.Bytes(), &res); err != nil || len(res.Designs) == 0 || res.Designs[0].SKU == "" || res.Designs[0].TPOTMs <= 0 {
		t.Errorf("json: %v %+v", err, res)
	}
	var out bytes.Buffer
	err := run(strings.Fields("--model llama-3.1-70b --context 8192 --concurrency 8 --tpot-ms 2"), &out, nil)
	if err == nil || !strings.Contains(err.Error(), "within 2 ms per token; the closest is") {
		t.Errorf("an impossible target: %v", err)
	}
	for _, bad := range []string{"--target gcp", "--format xml", "--price nope", "--target natron --price a100=5"} {
		if err := run(append(strings.Fields("--model llama-3.1-8b"), strings.Fields(bad)...), &out, nil); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
