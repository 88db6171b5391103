// Package pricing is what node shapes cost: the AKS VM sizes' Azure retail
// prices per region (azure.json, refreshed from the Azure Retail Prices API
// by Refresh), and the bare-metal profiles' prices, which the provider sets
// in a stack's pricing block.
package pricing

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
)

// HoursPerMonth turns an hourly price into a monthly one (365 × 24 / 12).
const HoursPerMonth = 730

// Price is one node shape's hourly price in one region, USD.
type Price struct {
	SKU    string `json:"sku"`
	Region string `json:"region"`
	// OnDemand and Spot are USD per hour; 0 is "not on record".
	OnDemand float64 `json:"onDemand,omitempty"`
	Spot     float64 `json:"spot,omitempty"`
	// Retrieved is the date the figures were read, Source where.
	Retrieved string `json:"retrieved"`
	Source    string `json:"source"`
}

// Hourly is the price of the kind asked for, and whether it is on record.
func (p Price) Hourly(spot bool) (float64, bool) {
	if spot {
		return p.Spot, p.Spot > 0
	}
	return p.OnDemand, p.OnDemand > 0
}

// Table is prices by node shape and region.
type Table []Price

// Lookup finds a node shape's price in a region.
func (t Table) Lookup(sku, region string) (Price, bool) {
	for _, p := range t {
		if p.SKU == sku && p.Region == region {
			return p, true
		}
	}
	return Price{}, false
}

// Regions lists the regions the table has prices for.
func (t Table) Regions() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range t {
		if !seen[p.Region] {
			seen[p.Region] = true
			out = append(out, p.Region)
		}
	}
	sort.Strings(out)
	return out
}

//go:embed azure.json
var azureJSON []byte

// Azure is the AKS VM sizes' prices on record (azure.json).
var Azure = mustTable(azureJSON)

func mustTable(b []byte) Table {
	var t Table
	if err := json.Unmarshal(b, &t); err != nil {
		panic(fmt.Sprintf("pricing: azure.json: %v", err)) // the embedded file is checked by TestAzureTable
	}
	return t
}
