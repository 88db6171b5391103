// Package pooltest makes pools as the stack's plan resolves them, for the
// tests of the components and targets that build on pools.
package pooltest

import (
	"testing"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/gpupool"
)

// Resolved is a pool with its node shape from a catalog section and its
// facts.
func Resolved(t testing.TB, section catalog.Section, spec gpupool.Spec) gpupool.Resolved {
	t.Helper()
	sku, err := section.SKU(nil, spec.SKU)
	if err != nil {
		t.Fatal(err)
	}
	return gpupool.Resolve(spec, sku)
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
