package pricing

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/internal/catalog"
)

// Every price on record names a node shape of the AKS catalog, a date and
// a source; no shape and region is listed twice.
func TestAzureTable(t *testing.T) {
	t.Parallel()
	if len(Azure) == 0 {
		t.Fatal("no prices on record")
	}
	seen := map[string]bool{}
	for _, p := range Azure {
		if _, err := catalog.Azure.SKU(nil, p.SKU); err != nil {
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
	if p, ok := Azure.Lookup("Standard_NC24ads_A100_v4", "eastus"); !ok || p.OnDemand != 3.673 {
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
	want := Table{
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

// A pool's cost: the stack's own price wins, else the table's in the
// stack's region, spot for a spot pool; without one on record, the reason
// names the key to set.
func TestPoolCost(t *testing.T) {
	t.Parallel()
	table := Table{{SKU: "Standard_NC24ads_A100_v4", Region: "eastus", OnDemand: 3.673, Retrieved: "2026-11-09", Source: "s"}}
	pool := PoolShape{SKU: "Standard_NC24ads_A100_v4", MinNodes: 1, MaxNodes: 4, Expected: 2}
	for _, tc := range []struct {
		name string
		spec Spec
		pool PoolShape
		want *PoolCost
		note string
	}{
		{"the table's price in the region", Spec{Region: "eastus"}, pool,
			&PoolCost{Hourly: 3.673, AtMin: 2681.29, AtMax: 10725.16, Expected: 5362.58, Currency: "USD", Source: "2026-11-09, s"}, ""},
		{"the stack's own price wins", Spec{Region: "eastus", Prices: map[string]float64{"Standard_NC24ads_A100_v4": 2.5}, Currency: "EUR"}, pool,
			&PoolCost{Hourly: 2.5, AtMin: 1825, AtMax: 7300, Expected: 3650, Currency: "EUR", Source: "the stack's pricing.prices"}, ""},
		{"expected is at least minNodes", Spec{Prices: map[string]float64{"h100-80gb-x8": 20}}, PoolShape{SKU: "h100-80gb-x8", MinNodes: 1, MaxNodes: 2},
			&PoolCost{Hourly: 20, AtMin: 14600, AtMax: 29200, Expected: 14600, Currency: "USD", Source: "the stack's pricing.prices"}, ""},
		{"no region", Spec{}, pool, nil, "no price: set pricing.region (AKS) or pricing.prices.Standard_NC24ads_A100_v4"},
		{"not on record in the region", Spec{Region: "westeurope"}, pool, nil, "no price on record for Standard_NC24ads_A100_v4 in westeurope"},
		{"no spot price on record", Spec{Region: "eastus"}, PoolShape{SKU: "Standard_NC24ads_A100_v4", MaxNodes: 1, Spot: true}, nil, "no spot price on record"},
	} {
		got, note := tc.spec.Cost(tc.pool, table)
		if diff := cmp.Diff(tc.want, got); diff != "" || !strings.HasPrefix(note, tc.note) || (tc.note == "") != (note == "") {
			t.Errorf("%s: note %q (-want +got):\n%s", tc.name, note, diff)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	errs := Spec{Region: "West Europe", Currency: "dollars", Prices: map[string]float64{"a": 0, "b": 2}}.Validate(nil)
	want := []string{"region: Invalid value: \"West Europe\": must be an Azure region name", "currency: Invalid value: \"dollars\": must be an ISO 4217 code", "prices[a]: Invalid value: 0: must be an hourly price > 0"}
	if len(errs) != len(want) {
		t.Fatalf("%v", errs)
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i].Error(), w) {
			t.Errorf("%q, want %q", errs[i].Error(), w)
		}
	}
	if errs := (Spec{Region: "westeurope", Currency: "EUR", Prices: map[string]float64{"h100-80gb-x8": 19.5}}).Validate(nil); len(errs) > 0 {
		t.Errorf("a valid block: %v", errs)
	}
}
