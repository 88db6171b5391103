// Package pricing is what node shapes cost: a price table per target (a
// target with published prices keeps its table beside it) and the prices a
// stack's pricing block sets, which win.
package pricing

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
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
	// Retrieved is the date of the on-demand figure (of the data, not of
	// reading it), Source where it comes from; SpotRetrieved and
	// SpotSource the spot figure's, which may be older or from elsewhere.
	Retrieved     string `json:"retrieved"`
	Source        string `json:"source"`
	SpotRetrieved string `json:"spotRetrieved,omitempty"`
	SpotSource    string `json:"spotSource,omitempty"`
}

// Hourly is the price of the kind asked for, and whether it is on record.
func (p Price) Hourly(spot bool) (float64, bool) {
	if spot {
		return p.Spot, p.Spot > 0
	}
	return p.OnDemand, p.OnDemand > 0
}

// Origin is the date and source of the figure of the kind asked for.
func (p Price) Origin(spot bool) string {
	if spot {
		return p.SpotRetrieved + ", " + p.SpotSource
	}
	return p.Retrieved + ", " + p.Source
}

// Table is prices by node shape and region.
type Table []Price

// Dated is the newest date of the table's figures: what a missing figure
// is missing from.
func (t Table) Dated() string {
	var d string
	for _, p := range t {
		d = max(d, DataDate(p.Retrieved), DataDate(p.SpotRetrieved))
	}
	return d
}

// DataDate is a figure's date as it sorts: the sourced data writes a
// date known only as a bound ("<=2024-08-27") with its bound.
func DataDate(d string) string { return strings.TrimPrefix(d, "<=") }

// Missing says in words which figure the table lacks for sku in region,
// spot or on-demand, "" when it has it.
func (t Table) Missing(sku, region string, spot bool) string {
	kind := "price"
	if spot {
		kind = "spot price"
	}
	p, ok := t.Lookup(sku, region)
	if ok {
		if _, has := p.Hourly(spot); has {
			return ""
		}
	}
	if len(t) == 0 {
		return fmt.Sprintf("no %s for %s: the target keeps no price table; set the stack's pricing.prices", kind, sku)
	}
	return fmt.Sprintf("no %s for %s in %s in the table dated %s", kind, sku, region, t.Dated())
}

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

// MustParse reads a price table kept as JSON; a bad table is a bug of the
// program (each is checked by its target's tests), so it panics.
func MustParse(name string, b []byte) Table {
	var t Table
	if err := json.Unmarshal(b, &t); err != nil {
		panic(fmt.Sprintf("pricing: %s: %v", name, err))
	}
	return t
}
