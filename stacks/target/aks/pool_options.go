package aks

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/gpupool"
)

// PoolOptions are a pool's AKS keys (pools[i].aks): what only an agent pool
// has, as Cluster API's Azure provider keeps them in its AKS machine pool
// spec.
type PoolOptions struct {
	// SpotMaxPrice is the most a spot node may cost, in USD/hour, only with
	// spot: -1 pays up to the on-demand price, or a price above 0.
	// Default: -1.
	SpotMaxPrice *float64 `json:"spotMaxPrice,omitempty"`
	// Zones are availability zones, "1", "2" or "3", no repeats.
	Zones []string `json:"zones,omitempty"`
	// OSDiskSizeGB is the OS disk, 30 to 2048 GB: room for multi-GB
	// inference images.
	// Default: 256.
	OSDiskSizeGB int `json:"osDiskSizeGB,omitempty"`
}

// Target is aks: the options' key in the pool.
func (*PoolOptions) Target() catalog.Target { return Name }

// NewPoolOptions is an empty aks pool block.
func (Target) NewPoolOptions() gpupool.Options { return &PoolOptions{} }

// poolOptions are a pool's AKS keys, or none set.
func poolOptions(s gpupool.Spec) PoolOptions {
	if o, ok := s.Options.(*PoolOptions); ok && o != nil {
		return *o
	}
	return PoolOptions{}
}

// ValidatePool checks the keys only AKS reads: the spot price, zones and
// the OS disk (pools[i].aks).
func (Target) ValidatePool(p *field.Path, s gpupool.Spec) field.ErrorList {
	var errs field.ErrorList
	o, p := poolOptions(s), p.Child(string(Name))
	if o.SpotMaxPrice != nil {
		switch price := *o.SpotMaxPrice; {
		case !s.Spot:
			errs = append(errs, fielderr.Invalid(p.Child("spotMaxPrice"), price, "only with spot: true"))
		case price != -1 && price <= 0:
			errs = append(errs, fielderr.Invalid(p.Child("spotMaxPrice"), price, "must be -1 (up to the on-demand price) or a price > 0 in US dollars per hour"))
		}
	}
	seen := map[string]bool{}
	for j, z := range o.Zones {
		if !slices.Contains(zones, z) {
			errs = append(errs, fielderr.NotSupported(p.Child("zones").Index(j), z, zones))
		} else if seen[z] {
			errs = append(errs, fielderr.Duplicate(p.Child("zones").Index(j), z, "must not repeat a zone"))
		}
		seen[z] = true
	}
	if o.OSDiskSizeGB != 0 && (o.OSDiskSizeGB < minDiskGB || o.OSDiskSizeGB > maxDiskGB) {
		errs = append(errs, fielderr.Invalid(p.Child("osDiskSizeGB"), o.OSDiskSizeGB, "must be between %d and %d", minDiskGB, maxDiskGB))
	}
	return errs
}
