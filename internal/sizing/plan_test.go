package sizing

import (
	"errors"
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
		{Requirements{Model: "llama-4", Concurrency: 1, TPOT: 0.05}, `model: "llama-4" is not in the catalog`},
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
