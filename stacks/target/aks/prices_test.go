package aks

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/natron/gpu-node-pools/internal/pricing"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// Every price on record names a node shape of the AKS catalog, a date and
// a source for each figure; no shape and region is listed twice; spot is
// never above on-demand (some spot meters equal it: no discount there).
func TestAzureTable(t *testing.T) {
	t.Parallel()
	if len(Prices) == 0 {
		t.Fatal("no prices on record")
	}
	seen := map[string]bool{}
	for _, p := range Prices {
		if _, err := Sizes.SKU(nil, p.SKU); err != nil {
			t.Errorf("%s: %v", p.SKU, err)
		}
		if (p.OnDemand > 0) != (p.Retrieved != "" && p.Source != "") || (p.Spot > 0) != (p.SpotRetrieved != "" && p.SpotSource != "") ||
			(p.OnDemand <= 0 && p.Spot <= 0) || (p.Spot > 0 && p.OnDemand > 0 && p.Spot > p.OnDemand) {
			t.Errorf("%s in %s: %+v", p.SKU, p.Region, p)
		}
		if k := p.SKU + "/" + p.Region; seen[k] {
			t.Errorf("%s twice", k)
		} else {
			seen[k] = true
		}
	}
	for _, region := range DefaultPriceRegions {
		if _, ok := Prices.Lookup("Standard_NC24ads_A100_v4", region); !ok {
			t.Errorf("no NC24ads A100 v4 price in %s", region)
		}
	}
}

// The table is what the sourced data gives (gpu-plan prices --shared
// rebuilds it): the newest figure of each cell, with its own source and
// date, for every catalog size that has one.
func TestAzureTableIsTheSourcedData(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join(pulumitest.SharedDir(t), PricesTSV))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := Target{}.PricesFromData(f)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, Prices); diff != "" {
		t.Errorf("prices.json is not the sourced data; rebuild it with gpu-plan prices --target aks --shared <shared> (-want +got):\n%s", diff)
	}
}

// Azure prices a family linearly in its GPUs: sizes that are multiples of
// one shape (the same vCPUs and memory per GPU, both with or both without
// RDMA) cost the same per GPU in a region, within 2 % (the check that
// caught the NC48ads/NC96ads A100 v4 and NC80adis H100 v5 figures 26-30 %
// above their one-GPU siblings).
func TestAzurePricesAreLinearInAFamily(t *testing.T) {
	t.Parallel()
	perGPU := map[string]map[string]float64{} // family/region → sku → USD per GPU-hour
	for _, p := range Prices {
		s, _ := Sizes.SKU(nil, p.SKU)
		if p.OnDemand <= 0 || s.GPUs == 0 {
			continue
		}
		k := fmt.Sprintf("%s (%d vCPUs, %d GiB per GPU, RDMA %v) in %s", s.Family, s.VCPUs/s.GPUs, s.MemoryGiB/s.GPUs,
			strings.Contains(s.Name, "rs_"), p.Region)
		if perGPU[k] == nil {
			perGPU[k] = map[string]float64{}
		}
		perGPU[k][p.SKU] = p.OnDemand / float64(s.GPUs)
	}
	checked := 0
	for fam, skus := range perGPU {
		lo, hi := math.Inf(1), 0.0
		for _, v := range skus {
			lo, hi = min(lo, v), max(hi, v)
		}
		// NCasT4_v3's 4-GPU size is 10 % cheaper per GPU in every region and
		// in both sources: a real discount, not a wrong figure.
		if len(skus) > 1 && !strings.HasPrefix(fam, "NCasT4_v3") {
			checked++
			if hi/lo > 1.02 {
				t.Errorf("%s: per-GPU prices %v differ by %.0f %%", fam, skus, 100*(hi/lo-1))
			}
		}
	}
	if checked < 4 {
		t.Errorf("only %d families with several sizes checked", checked)
	}
}

// The fixed figures, as the sourced data gives them.
func TestAzureFixedEntries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sku, region string
		onDemand    float64
	}{
		{"Standard_NC24ads_A100_v4", "eastus", 3.673},
		{"Standard_NC48ads_A100_v4", "eastus", 7.346},
		{"Standard_NC96ads_A100_v4", "eastus", 14.692},
		{"Standard_NC80adis_H100_v5", "eastus", 13.96},
	} {
		if p, ok := Prices.Lookup(tc.sku, tc.region); !ok || p.OnDemand != tc.onDemand {
			t.Errorf("%s in %s: %+v, want %g", tc.sku, tc.region, p, tc.onDemand)
		}
	}
}

// Refresh reads the API as it answers (the item fields of the Retail
// Prices API's documented response, two pages): Linux pay-as-you-go and
// spot meters, not Windows or low-priority ones, in every region asked.
func TestRefresh(t *testing.T) {
	t.Parallel()
	item := func(sku, region, meter, product string, price float64) map[string]any {
		return map[string]any{"armSkuName": sku, "armRegionName": region, "meterName": meter, "productName": product,
			"retailPrice": price, "type": "Consumption", "isPrimaryMeterRegion": true, "currencyCode": "USD", "unitOfMeasure": "1 Hour"}
	}
	var filters []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := r.URL.Query().Get("$filter")
		var page map[string]any
		switch {
		case r.URL.Query().Get("page") == "2":
			page = map[string]any{"Items": []any{item("Standard_NC24ads_A100_v4", "westeurope", "NC24ads A100 v4 Spot", "Virtual Machines NCadsA100v4 Series", 1.1)}}
		case strings.Contains(f, "'westeurope'"):
			filters = append(filters, f)
			page = map[string]any{"Items": []any{
				item("Standard_NC24ads_A100_v4", "westeurope", "NC24ads A100 v4", "Virtual Machines NCadsA100v4 Series", 4.0),
				item("Standard_NC24ads_A100_v4", "westeurope", "NC24ads A100 v4", "Virtual Machines NCadsA100v4 Series Windows", 5.5),
				item("Standard_NC24ads_A100_v4", "westeurope", "NC24ads A100 v4 Low Priority", "Virtual Machines NCadsA100v4 Series", 0.9),
			}, "NextPageLink": srv.URL + "?page=2"}
		default:
			filters = append(filters, f)
			page = map[string]any{"Items": []any{item("Standard_ND96isr_H100_v5", "eastus", "ND96isr H100 v5", "Virtual Machines NDsr H100 v5 Series", 98.32)}}
		}
		_ = json.NewEncoder(w).Encode(page)
	}))
	defer srv.Close()
	got, err := Refresh(context.Background(), srv.Client(), srv.URL, []string{"Standard_NC24ads_A100_v4", "Standard_ND96isr_H100_v5"},
		[]string{"westeurope", "eastus"}, "2026-12-03")
	if err != nil {
		t.Fatal(err)
	}
	src := RetailPricesAPI + " (Linux, consumption)"
	want := pricing.Table{
		{SKU: "Standard_ND96isr_H100_v5", Region: "eastus", OnDemand: 98.32, Retrieved: "2026-12-03", Source: src},
		{SKU: "Standard_NC24ads_A100_v4", Region: "westeurope", OnDemand: 4.0, Spot: 1.1, Retrieved: "2026-12-03", Source: src},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refreshed table (-want +got):\n%s", diff)
	}
	if len(filters) != 2 || !strings.Contains(filters[0], "serviceName eq 'Virtual Machines' and priceType eq 'Consumption'") ||
		!strings.Contains(filters[0], "armSkuName eq 'Standard_NC24ads_A100_v4' or armSkuName eq 'Standard_ND96isr_H100_v5'") {
		t.Errorf("filters sent: %q", filters)
	}
}
