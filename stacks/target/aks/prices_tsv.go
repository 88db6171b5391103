package aks

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/natron/gpu-node-pools/internal/pricing"
)

// PricesTSV is where the sourced price data sits in the shared assets
// (data/azure-prices, with its SOURCES.md): the figures prices.json is
// built from (gpu-plan prices --tsv).
const PricesTSV = "data/azure-prices/prices.tsv"

// FromTSV builds the price table of skus from the sourced data: columns
// sku, region, kind (payg | spot), usd_per_hour, source, date. Where two
// sources give a cell, the newer figure wins (a date "<=D" counts as D);
// each price keeps the source and date of its own figure.
func FromTSV(r io.Reader, skus []string) (pricing.Table, error) {
	cr := csv.NewReader(r)
	cr.Comma, cr.FieldsPerRecord, cr.LazyQuotes = '\t', 6, true
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("prices TSV: %w", err)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != "sku,region,kind,usd_per_hour,source,date" {
		return nil, fmt.Errorf("prices TSV: want the header sku, region, kind, usd_per_hour, source, date")
	}
	byKey := map[[2]string]*pricing.Price{}
	for i, row := range rows[1:] {
		sku, region, kind, source, date := row[0], row[1], row[2], row[4], row[5]
		usd, err := strconv.ParseFloat(row[3], 64)
		if err != nil || usd <= 0 || (kind != "payg" && kind != "spot") {
			return nil, fmt.Errorf("prices TSV line %d: want kind payg or spot and a price > 0, got %q %q", i+2, kind, row[3])
		}
		if !slices.Contains(skus, sku) {
			continue
		}
		k := [2]string{sku, region}
		p := byKey[k]
		if p == nil {
			p = &pricing.Price{SKU: sku, Region: region}
			byKey[k] = p
		}
		if kind == "spot" && newer(date, p.SpotRetrieved) {
			p.Spot, p.SpotRetrieved, p.SpotSource = usd, date, source
		} else if kind == "payg" && newer(date, p.Retrieved) {
			p.OnDemand, p.Retrieved, p.Source = usd, date, source
		}
	}
	out := make(pricing.Table, 0, len(byKey))
	for _, p := range byKey {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SKU+out[i].Region < out[j].SKU+out[j].Region })
	return out, nil
}

// newer reports whether date is later than the one held ("" holds none).
func newer(date, held string) bool {
	return held == "" || pricing.DataDate(date) > pricing.DataDate(held)
}
