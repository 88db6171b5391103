package aks

import (
	"cmp"
	"context"
	_ "embed"
	"io"
	"net/http"

	"github.com/natron/gpu-node-pools/internal/pricing"
)

//go:embed prices.json
var pricesJSON []byte

// Prices are the AKS VM sizes' Azure retail prices on record per region
// (prices.json): built from the sourced data in the shared assets
// (FromTSV: gpu-plan prices --tsv), or refreshed from the Azure Retail
// Prices API (Refresh: gpu-plan prices).
var Prices = pricing.MustParse("prices.json", pricesJSON)

// Prices is the target's price table.
func (Target) Prices() pricing.Table { return Prices }

// DefaultPriceRegions are the regions gpu-plan prices reads when none are
// given.
var DefaultPriceRegions = []string{"westeurope", "germanywestcentral", "swedencentral", "eastus"}

// RefreshPrices reads the Azure Retail Prices API for every AKS size of
// the catalog.
func (Target) RefreshPrices(ctx context.Context, client *http.Client, api string, regions []string, today string) (pricing.Table, error) {
	skus := Sizes.Names()
	if len(regions) == 0 {
		regions = DefaultPriceRegions
	}
	return Refresh(ctx, client, cmp.Or(api, RetailPricesAPI), skus, regions, today)
}

// PricesFromData builds the table from the sourced price data (PricesTSV).
func (Target) PricesFromData(r io.Reader) (pricing.Table, error) { return FromTSV(r, Sizes.Names()) }

// PricesData is where the sourced data sits under the shared assets.
func (Target) PricesData() string { return PricesTSV }
