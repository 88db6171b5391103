package ollama_test

import (
	"math"
	"testing"

	"github.com/natron/gpu-node-pools/components/ollama"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
)

// One GPU resource gives an Ollama replica what the driver reports, less
// CUDA's own: an A10 22.06 GiB (not its 24 GB), a 1g.12gb H100 NVL slice
// 10.32 GiB (not 12), a quarter of a time-sliced A100 80GB 19.89.
func TestAvailableIsWhatTheDriverReports(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"a whole A10", ollama.AvailableGiB(pooltest.Pool(t, pooltest.AKS, "Standard_NV36ads_A10_v5", 1, "")), 22.49 - 0.43},
		{"an H100 NVL 1g slice", ollama.AvailableGiB(pooltest.Pool(t, pooltest.AKS, "Standard_NC80adis_H100_v5", 1, "MIG1g")), 10.75 - 0.43},
		{"a quarter of an A100 80GB", ollama.AvailableGiB(pooltest.TimeSliced(t, 4)), (80 - 0.43) / 4},
	} {
		if math.Abs(tc.got-tc.want) > 0.01 {
			t.Errorf("%s: %.2f GiB, want %.2f", tc.name, tc.got, tc.want)
		}
	}
}
