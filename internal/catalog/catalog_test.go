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

// A MIG instance has the memory the driver lists (mig.go), not its name's:
// 1g.12gb on an H100 NVL is 10.75 GiB. Where a listing stops (the H100
// NVL's 7g) the largest listed instance is scaled, never above the
// framebuffer.
func TestMIGSliceMemoryIsWhatTheDriverLists(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		gpu     GPU
		profile MIGProfile
		mib     int
	}{
		{H100NVL, "MIG1g", 11008},  // 10.75 GiB
		{H100NVL, "MIG3g", 47493},  // 46.38 GiB
		{H100NVL, "MIG7g", 94986},  // 2 × 46.38 GiB
		{H100SXM, "MIG7g", 81152},  // 79.25 GiB
		{A100SXM40, "MIG1g", 4864}, // 4.75 GiB
		{A100SXM80, "MIG3g", 40192},
		{H200SXM, "MIG1g", 16384}, // 16 GiB for "18gb"
	} {
		s, _ := tc.gpu.Slice(tc.profile)
		if s.MemoryMiB != tc.mib {
			t.Errorf("%s %s: %d MiB, want %d", tc.gpu.Model, tc.profile, s.MemoryMiB, tc.mib)
		}
	}
	for _, g := range []GPU{A100PCIe80, A100SXM40, A100SXM80, H100NVL, H100SXM, H200SXM} {
		if len(g.MIGGiB) == 0 {
			t.Errorf("%s: MIG without the instance sizes the driver lists", g.Model)
		}
		prev := 0
		for _, p := range MIGProfiles {
			s, _ := g.Slice(p)
			if s.MemoryMiB >= s.MemoryGB*1024 || s.MemoryMiB < prev || (g.FramebufferMiB > 0 && s.MemoryMiB > g.FramebufferMiB) {
				t.Errorf("%s %s: %d MiB (name %d GB, framebuffer %d MiB, previous %d)", g.Model, p, s.MemoryMiB, s.MemoryGB, g.FramebufferMiB, prev)
			}
			prev = s.MemoryMiB
		}
	}
}
