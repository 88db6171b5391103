package sizing

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/models"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
)

// Every design the planner offers meets the requirements by the same
// arithmetic the stack's fit check and throughput model use, priced ones
// come first and cheapest first, and every shape it leaves out says why.
func TestPlanDesignsMeetTheRequirements(t *testing.T) {
	t.Parallel()
	req := Requirements{Model: "llama-3.1-70b", Context: 8192, Concurrency: 32, TPOT: 0.05, Region: "eastus"}
	res, err := Recommend(req, aks.Sizes, aks.Prices)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Designs) < 3 {
		t.Fatalf("%d designs: %+v", len(res.Designs), res)
	}
	for i, d := range res.Designs {
		sku, _ := aks.Sizes.SKU(nil, d.SKU)
		if d.TPOTMs > 50 || d.Batch*d.Replicas < 32 || d.MaxNodes*sku.GPUs < d.Replicas*d.TensorParallel {
			t.Errorf("design %+v does not meet the requirements", d)
		}
		m := fit.Model{Name: "m", ParametersB: 70.6, Dtype: "auto", TensorParallel: d.TensorParallel, GPUMemoryUtilization: 0.9,
			MaxReplicas: d.Replicas, MaxModelLen: 8192, Concurrency: d.Batch, Shape: mustEntry(t, "llama-3.1-70b").Shape}
		pool := gpupool.NewFacts(gpupool.Spec{Name: "serve", MaxNodes: d.MaxNodes}, sku, nil)
		if errs := fit.Fit(nil, m, pool); len(errs) > 0 {
			t.Errorf("the fit check refuses design %+v: %v", d, errs)
		}
		if i > 0 && less(d, res.Designs[i-1], false) {
			t.Errorf("design %d (%s, %.0f/month) ranks after a dearer one (%s, %.0f)", i, d.SKU, d.MonthlyOnDemand, res.Designs[i-1].SKU, res.Designs[i-1].MonthlyOnDemand)
		}
	}
	if res.Designs[0].MonthlyOnDemand <= 0 {
		t.Errorf("the first design has no price: %+v", res.Designs[0])
	}
	rejected := map[string]string{}
	for _, r := range res.Rejected {
		rejected[r.SKU] = r.Reason
	}
	if !strings.Contains(rejected["Standard_NC4as_T4_v3"], "one sequence of 8192 tokens needs") {
		t.Errorf("T4: %q", rejected["Standard_NC4as_T4_v3"])
	}
	if len(res.Designs)+len(res.Rejected) < len(aks.Sizes.SKUs()) {
		t.Errorf("%d designs and %d rejections for %d shapes", len(res.Designs), len(res.Rejected), len(aks.Sizes.SKUs()))
	}
}

// Requirements nothing meets, and bad input, fail with the requirement
// named; the closest design is offered.
func TestPlanErrors(t *testing.T) {
	t.Parallel()
	_, err := Recommend(Requirements{Model: "llama-3.1-70b", Context: 8192, Concurrency: 8, TPOT: 0.002, Region: "eastus"}, aks.Sizes, aks.Prices)
	var nf *NothingFits
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "within 2 ms per token; the closest is Standard_ND96") {
		t.Errorf("2 ms per token: %v", err)
	}
	for _, tc := range []struct {
		req  Requirements
		want string
	}{
		{Requirements{Model: "llama-4", Concurrency: 1, TPOT: 0.05}, `model: "llama-4" is neither a catalog model (dbrx, `},
		{Requirements{Model: "llama-3.1-8b", Concurrency: 1, TPOT: 0.05, KVCacheDtype: "int8"}, "kv-cache-dtype: must be one of auto, fp8"},
		{Requirements{Model: "llama-3.1-8b", Context: 200000, Concurrency: 1, TPOT: 0.05}, "context: must be between 1 and llama-3.1-8b's native 131072 tokens"},
		{Requirements{Model: "llama-3.1-8b", Concurrency: 0, TPOT: 0.05}, "concurrency: must be >= 1"},
		{Requirements{Model: "llama-3.1-8b", Concurrency: 1}, "tpot: must be > 0"},
		{Requirements{Model: "llama-3.1-8b", Concurrency: 1, TPOT: 0.05, Quantization: "int4"}, "quantization: must be one of"},
	} {
		if _, err := Recommend(tc.req, aks.Sizes, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.req, err, tc.want)
		}
	}
}

func mustEntry(t *testing.T, name string) models.Card {
	t.Helper()
	m, ok := models.Known.Lookup(name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	return m
}

// The planner holds the slow end of each design's band to the target: a
// design whose model figure meets the target but whose band's slow end
// does not is not offered, and every design offered carries its band.
func TestPlanPicksAtThePessimisticEnd(t *testing.T) {
	t.Parallel()
	base := Requirements{Model: "llama-3.1-8b", Context: 8192, Concurrency: 1, TPOT: 1, Region: "westeurope"}
	res, err := Recommend(base, aks.Sizes, aks.Prices)
	if err != nil {
		t.Fatal(err)
	}
	var h100 *Design
	for i, d := range res.Designs {
		if d.TPOTRangeMs[0] > d.TPOTMs || d.TPOTRangeMs[1] < d.TPOTMs || d.TTFTRangeMs[1] < d.TTFTMs {
			t.Errorf("%s: TPOT %.1f in %v, TTFT %.1f in %v", d.SKU, d.TPOTMs, d.TPOTRangeMs, d.TTFTMs, d.TTFTRangeMs)
		}
		if d.SKU == "Standard_NC40ads_H100_v5" {
			h100 = &res.Designs[i]
		}
	}
	if h100 == nil || h100.TPOTRangeMs[1] <= h100.TPOTMs {
		t.Fatalf("no H100 NVL design with a band: %+v", h100)
	}
	// a target between the model's figure and the band's slow end
	req := base
	req.TPOT = (h100.TPOTMs + h100.TPOTRangeMs[1]) / 2 / 1000
	res, err = Recommend(req, aks.Sizes, aks.Prices)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range res.Designs {
		if d.SKU == h100.SKU && d.TensorParallel == 1 {
			t.Errorf("offered at %.1f ms (band %v) for a %.2f ms target", d.TPOTMs, d.TPOTRangeMs, req.TPOT*1000)
		}
		if d.TPOTRangeMs[1] > req.TPOT*1000+0.1 {
			t.Errorf("%s: band %v above the target %.2f", d.SKU, d.TPOTRangeMs, req.TPOT*1000)
		}
	}
}

// A model outside the catalog is planned from its config.json, and an fp8
// KV cache rules out the GPUs vLLM refuses it on, saying why.
func TestPlanFromAConfigAndAnFP8KVCache(t *testing.T) {
	t.Parallel()
	req := Requirements{Model: filepath.Join("..", "models", "testdata", "mixtral-8x7b", "config.json"), Context: 8192, Concurrency: 8,
		TPOT: 0.05, Region: "eastus", KVCacheDtype: "fp8"}
	res, err := Recommend(req, aks.Sizes, aks.Prices)
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != "mixtral-8x7b" || len(res.Designs) == 0 {
		t.Fatalf("%+v", res)
	}
	for _, d := range res.Designs {
		if !strings.Contains(d.GPU, "H100") && !strings.Contains(d.GPU, "H200") {
			t.Errorf("fp8 KV on %s", d.GPU)
		}
	}
	found := false
	for _, r := range res.Rejected {
		if r.SKU == "Standard_NC96ads_A100_v4" {
			found = strings.Contains(r.Reason, "an fp8 KV cache needs compute capability 9.0")
		}
	}
	if !found {
		t.Errorf("the A100 sizes are not rejected for the fp8 KV cache: %+v", res.Rejected)
	}
}

// A plan in each of the four regions ranks by cost, on-demand and on
// spot: every priced design before every unpriced one, cheapest first,
// and each missing figure named in words with the table's date.
func TestPlanInEveryRegion(t *testing.T) {
	t.Parallel()
	for _, region := range aks.DefaultPriceRegions {
		for _, spot := range []bool{false, true} {
			req := Requirements{Model: "llama-3.1-70b", Context: 8192, Concurrency: 32, TPOT: 0.05, Region: region, Spot: spot}
			res, err := Recommend(req, aks.Sizes, aks.Prices)
			if err != nil {
				t.Fatalf("%s: %v", region, err)
			}
			priced := 0
			for i, d := range res.Designs {
				cost := d.MonthlyOnDemand
				if spot && d.MonthlySpot > 0 {
					cost = d.MonthlySpot
				}
				if cost > 0 {
					priced++
				}
				if i > 0 && less(d, res.Designs[i-1], spot) {
					t.Errorf("%s spot=%v: %s ranks after a dearer %s", region, spot, d.SKU, res.Designs[i-1].SKU)
				}
				wantWords := d.MonthlyOnDemand <= 0 || (spot && d.MonthlySpot <= 0)
				if wantWords != (d.MissingPrice != "") || (wantWords && !strings.Contains(d.MissingPrice, " in "+region+" in the table dated 2026-08-22")) {
					t.Errorf("%s spot=%v: %s says %q (on-demand %v, spot %v)", region, spot, d.SKU, d.MissingPrice, d.MonthlyOnDemand, d.MonthlySpot)
				}
			}
			if priced == 0 {
				t.Errorf("%s spot=%v: nothing priced", region, spot)
			}
			if spot && region == "germanywestcentral" && !strings.HasPrefix(res.Designs[0].MissingPrice, "no spot price for") {
				t.Errorf("germanywestcentral has no spot price in the table, yet: %+v", res.Designs[0])
			}
		}
	}
}
