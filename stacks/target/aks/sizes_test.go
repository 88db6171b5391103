package aks

import (
	"strings"
	"testing"
)

// The required sizes, with figures from Microsoft's size tables.
func TestAzureFigures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		gpus, memGB, vcpus int
		memGiB             int
		mig                bool
	}{
		{"Standard_NC24ads_A100_v4", 1, 80, 24, 220, true},
		{"Standard_NC48ads_A100_v4", 2, 80, 48, 440, true},
		{"Standard_NC96ads_A100_v4", 4, 80, 96, 880, true},
		{"Standard_NC40ads_H100_v5", 1, 94, 40, 320, true},
		{"Standard_NC80adis_H100_v5", 2, 94, 80, 640, true},
		{"Standard_ND96asr_v4", 8, 40, 96, 900, true},
		{"Standard_ND96amsr_A100_v4", 8, 80, 96, 1900, true},
		{"Standard_ND96isr_H100_v5", 8, 80, 96, 1900, true},
		{"Standard_ND96isr_H200_v5", 8, 141, 96, 1850, true},
		{"Standard_NC6s_v3", 1, 16, 6, 112, false},
		{"Standard_NC24s_v3", 4, 16, 24, 448, false},
		{"Standard_NC4as_T4_v3", 1, 16, 4, 28, false},
		{"Standard_NC64as_T4_v3", 4, 16, 64, 440, false},
		{"Standard_NV36ads_A10_v5", 1, 24, 36, 440, false},
		{"Standard_NV72ads_A10_v5", 2, 24, 72, 880, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Sizes.SKU(nil, tc.name)
			if err != nil {
				t.Fatalf("%s missing from the catalog", tc.name)
			}
			if s.GPUs != tc.gpus || s.GPU.MemoryGB != tc.memGB || s.VCPUs != tc.vcpus || s.MemoryGiB != tc.memGiB || s.GPU.MIG != tc.mig {
				t.Errorf("got %d GPUs x %d GB, %d vCPUs, %d GiB, MIG %v; want %d x %d, %d, %d, %v",
					s.GPUs, s.GPU.MemoryGB, s.VCPUs, s.MemoryGiB, s.GPU.MIG, tc.gpus, tc.memGB, tc.vcpus, tc.memGiB, tc.mig)
			}
		})
	}
}

// Every size is an Azure N-series (GPU) size name.
func TestSizeNames(t *testing.T) {
	t.Parallel()
	for _, n := range Sizes.Names() {
		if !strings.HasPrefix(n, "Standard_N") {
			t.Errorf("%s: not an Azure N-series size name", n)
		}
	}
}

// The two H100 NVL cards of the NC80adis size are paired by an NVLink
// bridge (600 GB/s, the H100 NVL product brief; NCCL takes the NVLink path
// on it), not PCIe alone: tensor parallelism 2 all-reduces over NVLink, and
// the planner's decode speed on the pair follows from it.
func TestH100NVLPairIsNVLinked(t *testing.T) {
	t.Parallel()
	s, err := Sizes.SKU(nil, "Standard_NC80adis_H100_v5")
	if err != nil {
		t.Fatal(err)
	}
	if s.Link.Kind != "NVLink" || s.Link.GBps != 600 {
		t.Errorf("NC80adis H100 v5 link %+v, want the NVLink bridge at 600 GB/s", s.Link)
	}
}
