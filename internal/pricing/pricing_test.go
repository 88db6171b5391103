package pricing

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
		{"no region", Spec{}, pool, nil, "no price: set pricing.region (a target with a price table) or pricing.prices.Standard_NC24ads_A100_v4"},
		{"not on record in the region", Spec{Region: "westeurope"}, pool, nil, "no price for Standard_NC24ads_A100_v4 in westeurope in the table dated 2026-11-09: refresh"},
		{"no spot price on record", Spec{Region: "eastus"}, PoolShape{SKU: "Standard_NC24ads_A100_v4", MaxNodes: 1, Spot: true}, nil, "no spot price for Standard_NC24ads_A100_v4 in eastus in the table dated 2026-11-09"},
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
	want := []string{"region: Invalid value: \"West Europe\": must be a region name", "currency: Invalid value: \"dollars\": must be an ISO 4217 code", "prices[a]: Invalid value: 0: must be an hourly price > 0"}
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
