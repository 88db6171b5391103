package aks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/natron/gpu-node-pools/internal/pricing"
)

// RetailPricesAPI is the Azure Retail Prices API: public, unauthenticated
// (learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices).
const RetailPricesAPI = "https://prices.azure.com/api/retail/prices"

// retailItem is the part of one API item Refresh reads.
type retailItem struct {
	ArmSkuName    string  `json:"armSkuName"`
	ArmRegionName string  `json:"armRegionName"`
	RetailPrice   float64 `json:"retailPrice"`
	MeterName     string  `json:"meterName"`
	ProductName   string  `json:"productName"`
	Type          string  `json:"type"`
	IsPrimary     bool    `json:"isPrimaryMeterRegion"`
}

type retailPage struct {
	Items        []retailItem `json:"Items"`
	NextPageLink string       `json:"NextPageLink"`
}

// Filter is the API's $filter for the Linux consumption meters of skus in
// region: pay-as-you-go and spot.
func Filter(region string, skus []string) string {
	var or []string
	for _, s := range skus {
		or = append(or, fmt.Sprintf("armSkuName eq '%s'", s))
	}
	return fmt.Sprintf("serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and armRegionName eq '%s' and (%s)",
		region, strings.Join(or, " or "))
}

// Refresh reads the prices of skus in regions from the API at base
// (RetailPricesAPI), following its pages, and returns them dated today.
// Windows meters and low-priority meters are left out; a meter named
// "... Spot" is the spot price. A size without a meter in a region is
// left out: it is not offered there.
func Refresh(ctx context.Context, client *http.Client, base string, skus, regions []string, today string) (pricing.Table, error) {
	byKey := map[[2]string]*pricing.Price{}
	for _, region := range regions {
		q := url.Values{"api-version": {"2023-01-01-preview"}, "$filter": {Filter(region, skus)}}
		next := base + "?" + q.Encode()
		for next != "" {
			page, err := get(ctx, client, next)
			if err != nil {
				return nil, fmt.Errorf("prices in %s: %w", region, err)
			}
			for _, it := range page.Items {
				if it.Type != "Consumption" || strings.Contains(it.ProductName, "Windows") ||
					strings.Contains(it.MeterName, "Low Priority") || it.RetailPrice <= 0 {
					continue
				}
				k := [2]string{it.ArmSkuName, it.ArmRegionName}
				p := byKey[k]
				if p == nil {
					p = &pricing.Price{SKU: it.ArmSkuName, Region: it.ArmRegionName, Retrieved: today, Source: RetailPricesAPI + " (Linux, consumption)"}
					byKey[k] = p
				}
				if strings.HasSuffix(it.MeterName, " Spot") {
					p.Spot = it.RetailPrice
				} else {
					p.OnDemand = it.RetailPrice
				}
			}
			next = page.NextPageLink
		}
	}
	out := make(pricing.Table, 0, len(byKey))
	for _, p := range byKey {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Region+out[i].SKU < out[j].Region+out[j].SKU
	})
	return out, nil
}

func get(ctx context.Context, client *http.Client, u string) (*retailPage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	var page retailPage
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	return &page, nil
}
