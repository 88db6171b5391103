package plan_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// A model names a catalog entry and gets the rest by default; one given by
// size only still loads, with a warning naming the keys that would make
// its KV cache exact; the catalog keys are checked like any other.
func TestModelsFromTheCatalog(t *testing.T) {
	t.Parallel()
	minimal := func(c map[string]any) {
		m := stacktest.Model(c)
		for k := range m {
			if k != "name" && k != "pool" && k != "source" {
				delete(m, k)
			}
		}
		m["model"] = "llama-3.1-8b"
	}
	for _, tc := range []struct {
		name    string
		edit    func(map[string]any)
		warning string // "" none
		err     []string
		tp, len int
	}{
		{"name, pool, source and model only", minimal, "", nil, 1, 131072},
		{"by size only: loads, with the warning", func(map[string]any) {},
			"gpu-node-pools:models[0]: the KV cache of llama3-8b is estimated from llama-3.1-8b, the catalog model nearest its 8B parameters; name the model (gpu-node-pools:models[0].model: one of [",
			nil, 1, 8192},
		{"unknown catalog model", func(c map[string]any) { minimal(c); stacktest.Model(c)["model"] = "llama-4" }, "",
			[]string{`gpu-node-pools:models[0].model: must be one of dbrx, deepseek-r1-distill-llama-70b, deepseek-v3, gemma-2-27b`}, 0, 0},
		{"catalog model and a size", func(c map[string]any) { minimal(c); stacktest.Model(c)["parametersB"] = 8 }, "",
			[]string{`gpu-node-pools:models[0].parametersB: the catalog model llama-3.1-8b gives it: leave it out, or drop model, got 8`}, 0, 0},
		{"by size without a context", func(c map[string]any) { delete(stacktest.Model(c), "maxModelLen") }, "",
			[]string{`gpu-node-pools:models[0].maxModelLen: required without model: no catalog entry gives the native context`}, 0, 0},
		{"an unknown KV cache dtype", func(c map[string]any) { minimal(c); stacktest.Model(c)["kvCacheDtype"] = "int8" }, "",
			[]string{`gpu-node-pools:models[0].kvCacheDtype: must be one of auto, fp8, got "int8"`}, 0, 0},
		{"an fp8 KV cache on an A100: refused as vLLM refuses it", func(c map[string]any) {
			minimal(c)
			stacktest.Model(c)["kvCacheDtype"] = "fp8"
			stacktest.Pool(c, 0)["sku"] = "a100-80gb-x8"
		}, "", []string{`gpu-node-pools:models[0].kvCacheDtype: an fp8 KV cache needs compute capability 9.0 or newer (FlashAttention 3), the pool's NVIDIA A100 80GB SXM4 has 8.0`}, 0, 0},
		{"a shape of its own: no warning", func(c map[string]any) {
			stacktest.Model(c)["shape"] = map[string]any{"layers": 32, "kvHeads": 8, "headDim": 128, "attentionHeads": 32, "hiddenSize": 4096}
		}, "", nil, 1, 8192},
		{"a shape without its KV fields", func(c map[string]any) {
			stacktest.Model(c)["shape"] = map[string]any{"layers": 32, "attention": "mla"}
		}, "", []string{"gpu-node-pools:models[0].shape.kvLoraRank: must be > 0", "gpu-node-pools:models[0].shape.ropeHeadDim: must be > 0"}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := stacktest.ServingNatron()
			tc.edit(c)
			p, err := plan.Load(stacktest.Encode(t, c), "dev")
			if len(tc.err) > 0 {
				var ce *plan.ConfigError
				if !errors.As(err, &ce) {
					t.Fatalf("want a ConfigError, got %v", err)
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not contain %q:\n%v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.warning == "" && len(p.Warnings) > 0:
				t.Errorf("unexpected warnings %q", p.Warnings)
			case tc.warning != "" && (len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], tc.warning)):
				t.Errorf("warnings %q, want one starting %q", p.Warnings, tc.warning)
			}
			e := p.Serving.Engines[0]
			if e.TensorParallel != tc.tp || e.MaxModelLen != tc.len {
				t.Errorf("tensorParallel %d, maxModelLen %d; want %d, %d", e.TensorParallel, e.MaxModelLen, tc.tp, tc.len)
			}
		})
	}
}

// The prod stack's pools priced from the dated table in its region: at
// minNodes, at maxNodes, and at the nodes its models' minReplicas keep up
// (llama3-70b: one replica of tensor parallel 4 holds one 8-GPU node);
// a size without a price on record says what to set.
func TestPoolCosts(t *testing.T) {
	t.Parallel()
	raw, _, err := pulumitest.StackConfig("prod")
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Load(pulumitest.Unqualified(raw), "prod")
	if err != nil {
		t.Fatal(err)
	}
	h100 := p.Costs["h100x8"].Cost
	if h100 == nil || h100.Hourly != 98.32 || h100.AtMin != 0 || h100.AtMax != 143547.2 || h100.Expected != 71773.6 {
		t.Errorf("h100x8: %+v", h100)
	}
	if a100 := p.Costs["a100"].Cost; a100 == nil || a100.AtMax != 10725.16 || a100.Expected != 0 {
		t.Errorf("a100: %+v", a100)
	}
	// eastus spot for the NCads H100 v5 equals pay-as-you-go in the sourced data: no discount there
	if c := p.Costs["h100spot"].Cost; c == nil || !c.Spot || c.Hourly != 6.98 || !strings.Contains(c.Source, "skypilot") {
		t.Errorf("h100spot: %+v", c)
	}
	if c := p.Costs["nd96"].Cost; c == nil || c.AtMax != 47844.2 || !strings.HasPrefix(c.Source, "2026-06-18, Azure/karpenter-provider-azure") {
		t.Errorf("nd96: %+v", c)
	}
}
