package platform_test

import (
	"testing"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
)

// aksLayer is a defaulted AKS layer over pools like a production stack's:
// an on-demand A100 pool, a spot H100 pool, an ND A100 pool split with
// MIG3g and an 8-GPU H100 pool.
func aksLayer(t *testing.T) (platform.Spec, []gpupool.Facts) {
	t.Helper()
	return platform.Spec{}.Defaults(platform.DevicePlugin), pooltest.Facts(t, pooltest.AKS,
		gpupool.Spec{Name: "a100", SKU: "Standard_NC24ads_A100_v4", MaxNodes: 4},
		gpupool.Spec{Name: "h100spot", SKU: "Standard_NC40ads_H100_v5", MaxNodes: 8, Spot: true},
		gpupool.Spec{Name: "nd96", SKU: "Standard_ND96amsr_A100_v4", MaxNodes: 2, MIGProfile: "MIG3g"},
		gpupool.Spec{Name: "h100x8", SKU: "Standard_ND96isr_H100_v5", MaxNodes: 2},
	)
}

// bareMetalLayer is a defaulted bare-metal layer (the GPU operator) over
// an inference pool, a training pool split with MIG3g and a notebook pool
// that time-slices each GPU four ways.
func bareMetalLayer(t *testing.T) (platform.Spec, []gpupool.Facts) {
	t.Helper()
	return platform.Spec{}.Defaults(platform.GPUOperator), pooltest.Facts(t, pooltest.Natron,
		gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 4},
		gpupool.Spec{Name: "train", SKU: "a100-80gb-x8", MaxNodes: 2, MIGProfile: "MIG3g"},
		gpupool.Spec{Name: "notebook", SKU: "a100-80gb-x4", MaxNodes: 2, TimeSlicing: 4},
	)
}
