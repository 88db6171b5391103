package pricing

import (
	"maps"
	"math"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
)

// Spec is the stack's pricing block (gpu-node-pools:pricing): where the
// AKS cluster runs, for the Azure price table, and prices the provider
// sets (the bare-metal profiles), which win over the table.
type Spec struct {
	// Region is the cluster's cloud region, which prices the pools from the
	// target's dated price table (aks: e.g. westeurope).
	Region string `json:"region,omitempty"`
	// Prices are hourly prices by node shape, in currency: the bare-metal
	// profiles' from the provider, or an AKS VM size, which wins over the
	// table.
	Prices map[string]float64 `json:"prices,omitempty"`
	// Currency is the currency of prices; the price tables are in USD.
	// Default: USD.
	Currency string `json:"currency,omitempty"`
}

var (
	regionRe   = regexp.MustCompile(`^[a-z][a-z0-9]{1,40}$`)
	currencyRe = regexp.MustCompile(`^[A-Z]{3}$`)
)

// Validate checks the block as written.
func (s Spec) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Region != "" && !regionRe.MatchString(s.Region) {
		errs = append(errs, fielderr.Invalid(p.Child("region"), s.Region, "must be a region name as the target's price table spells it: lowercase letters and digits"))
	}
	if s.Currency != "" && !currencyRe.MatchString(s.Currency) {
		errs = append(errs, fielderr.Invalid(p.Child("currency"), s.Currency, "must be an ISO 4217 code such as USD or EUR"))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Prices)) {
		if v := s.Prices[k]; v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			errs = append(errs, fielderr.Invalid(p.Child("prices").Key(k), v, "must be an hourly price > 0"))
		}
	}
	return errs
}

// PoolCost is what one pool costs a month, in Currency.
type PoolCost struct {
	Hourly float64 `json:"hourly"`
	// AtMin and AtMax are the pool at minNodes and at maxNodes; Expected
	// at the nodes the models' minReplicas keep up (at least minNodes).
	AtMin    float64 `json:"monthlyAtMinNodes"`
	AtMax    float64 `json:"monthlyAtMaxNodes"`
	Expected float64 `json:"monthlyExpected"`
	Currency string  `json:"currency"`
	Spot     bool    `json:"spot,omitempty"`
	Source   string  `json:"source"`
}

// Totals are monthly costs summed over pools.
type Totals struct{ AtMin, AtMax, Expected float64 }

// PoolShape is what the cost of a pool depends on.
type PoolShape struct {
	SKU                          string
	MinNodes, MaxNodes, Expected int
	Spot                         bool
}

// Cost is a pool's monthly cost: the stack's own price for its node
// shape, else the target's price table's in the stack's region (spot for
// a spot pool); the reason when there is none on record.
func (s Spec) Cost(pool PoolShape, table Table) (*PoolCost, string) {
	if v, ok := s.Prices[pool.SKU]; ok {
		return poolCost(pool, v, currency(s.Currency), "the stack's pricing.prices"), ""
	}
	if s.Region == "" {
		return nil, "no price: set pricing.region (a target with a price table) or pricing.prices." + pool.SKU
	}
	if why := table.Missing(pool.SKU, s.Region, pool.Spot); why != "" {
		return nil, why + ": refresh the table (gpu-plan prices) or set pricing.prices." + pool.SKU
	}
	p, _ := table.Lookup(pool.SKU, s.Region)
	hourly, _ := p.Hourly(pool.Spot)
	return poolCost(pool, hourly, "USD", p.Origin(pool.Spot)), ""
}

func poolCost(pool PoolShape, hourly float64, currency, source string) *PoolCost {
	month := func(nodes int) float64 { return math.Round(hourly*HoursPerMonth*float64(nodes)*100) / 100 }
	return &PoolCost{Hourly: hourly, AtMin: month(pool.MinNodes), AtMax: month(pool.MaxNodes),
		Expected: month(max(pool.Expected, pool.MinNodes)), Currency: currency, Spot: pool.Spot, Source: source}
}

func currency(c string) string {
	if c == "" {
		return "USD"
	}
	return c
}
