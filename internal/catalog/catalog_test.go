package catalog

import (
	"testing"
)

// MIG instance names as NVIDIA publishes them for each GPU.
func TestMIGSlices(t *testing.T) {
	t.Parallel()
	tests := []struct {
		gpu     GPU
		profile MIGProfile
		name    string
		perGPU  int
	}{
		{A100PCIe80, "MIG1g", "1g.10gb", 7},
		{A100PCIe80, "MIG2g", "2g.20gb", 3},
		{A100PCIe80, "MIG3g", "3g.40gb", 2},
		{A100PCIe80, "MIG4g", "4g.40gb", 1},
		{A100PCIe80, "MIG7g", "7g.80gb", 1},
		{A100SXM40, "MIG1g", "1g.5gb", 7},
		{A100SXM40, "MIG3g", "3g.20gb", 2},
		{H100NVL, "MIG1g", "1g.12gb", 7},
		{H100NVL, "MIG3g", "3g.47gb", 2},
		{H200SXM, "MIG1g", "1g.18gb", 7},
		{H200SXM, "MIG2g", "2g.35gb", 3},
		{H200SXM, "MIG7g", "7g.141gb", 1},
	}
	for _, tc := range tests {
		s, ok := tc.gpu.Slice(tc.profile)
		if !ok || s.Name != tc.name || s.PerGPU != tc.perGPU {
			t.Errorf("%s %s: got %+v, %v; want %s x%d", tc.gpu.Model, tc.profile, s, ok, tc.name, tc.perGPU)
		}
	}
	if _, ok := T4.Slice("MIG1g"); ok {
		t.Error("T4 has no MIG")
	}
	if _, ok := A100PCIe80.Slice("MIG5g"); ok || ValidMIG("MIG5g") {
		t.Error("MIG5g is not a profile")
	}
}
