// Package pooltest makes pools as the stack's plan resolves them, for the
// tests of the components and targets that build on pools.
package pooltest

import (
	"testing"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
)

// Resolved is a pool with its node shape from a catalog section and its
// facts.
func Resolved(t testing.TB, section catalog.Section, spec gpupool.Spec) gpupool.Resolved {
	t.Helper()
	sku, err := section.SKU(nil, spec.SKU)
	if err != nil {
		t.Fatal(err)
	}
	var spot *gpupool.Toleration
	if section.Target() == catalog.AKS {
		spot = aks.Target{}.SpotToleration()
	}
	return gpupool.Resolve(spec, sku, spot)
}

// Facts are the facts of pools from one catalog section.
func Facts(t testing.TB, section catalog.Section, specs ...gpupool.Spec) []gpupool.Facts {
	t.Helper()
	out := make([]gpupool.Facts, len(specs))
	for i, s := range specs {
		out[i] = Resolved(t, section, s).Facts
	}
	return out
}

// Pool is the facts of one pool of sku from a target's catalog section.
func Pool(t testing.TB, target catalog.Target, sku string, maxNodes int, mig catalog.MIGProfile) gpupool.Facts {
	t.Helper()
	section := map[catalog.Target]catalog.Section{catalog.AKS: catalog.Azure, catalog.Natron: catalog.BareMetal}[target]
	return Resolved(t, section, gpupool.Spec{Name: "infer", SKU: sku, MaxNodes: maxNodes, MIGProfile: mig}).Facts
}

// TimeSliced is an A100 pool whose GPUs each serve replicas pods.
func TimeSliced(t testing.TB, replicas int) gpupool.Facts {
	t.Helper()
	return Resolved(t, catalog.Azure, gpupool.Spec{Name: "infer", SKU: "Standard_NC24ads_A100_v4", MaxNodes: 2, TimeSlicing: replicas}).Facts
}
