// Package pooltest makes pools as the stack's plan resolves them, for the
// tests of the components and targets that build on pools.
package pooltest

import (
	"testing"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/stacks/target"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// The targets' fixtures, for the tests of components and libraries, which
// know no target package.
var (
	AKS    target.Target = aks.Target{}
	Natron target.Target = natron.Target{}
)

// Resolved is a pool with its node shape from the target's catalog
// section and its facts, with the target's spot toleration.
func Resolved(t testing.TB, tg target.Target, spec gpupool.Spec) gpupool.Resolved {
	t.Helper()
	sku, err := tg.Catalog().SKU(nil, spec.SKU)
	if err != nil {
		t.Fatal(err)
	}
	return gpupool.Resolve(spec, sku, tg.SpotToleration())
}

// Facts are the facts of pools of one target.
func Facts(t testing.TB, tg target.Target, specs ...gpupool.Spec) []gpupool.Facts {
	t.Helper()
	out := make([]gpupool.Facts, len(specs))
	for i, s := range specs {
		out[i] = Resolved(t, tg, s).Facts
	}
	return out
}

// Pool is the facts of one pool of sku from a target's catalog section.
func Pool(t testing.TB, tg target.Target, sku string, maxNodes int, mig catalog.MIGProfile) gpupool.Facts {
	t.Helper()
	return Resolved(t, tg, gpupool.Spec{Name: "infer", SKU: sku, MaxNodes: maxNodes, MIGProfile: mig}).Facts
}

// TimeSliced is an A100 pool whose GPUs each serve replicas pods.
func TimeSliced(t testing.TB, replicas int) gpupool.Facts {
	t.Helper()
	return Resolved(t, AKS, gpupool.Spec{Name: "infer", SKU: "Standard_NC24ads_A100_v4", MaxNodes: 2, TimeSlicing: replicas}).Facts
}
