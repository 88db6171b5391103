package aks

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/natron/gpu-node-pools/internal/pricing"
)

// Every price on record names a node shape of the AKS catalog, a date and
// a source; no shape and region is listed twice.
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
		if p.Retrieved == "" || p.Source == "" || (p.OnDemand <= 0 && p.Spot <= 0) || (p.Spot > 0 && p.OnDemand > 0 && p.Spot >= p.OnDemand) {
			t.Errorf("%s in %s: %+v", p.SKU, p.Region, p)
		}
		if k := p.SKU + "/" + p.Region; seen[k] {
			t.Errorf("%s twice", k)
		} else {
			seen[k] = true
		}
	}
	if p, ok := Prices.Lookup("Standard_NC24ads_A100_v4", "eastus"); !ok || p.OnDemand != 3.673 {
		t.Errorf("NC24ads A100 v4 in eastus: %+v %v", p, ok)
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
