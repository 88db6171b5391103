package catalog

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
)

func TestEverySKUIsComplete(t *testing.T) {
	t.Parallel()
	for _, section := range []Section{Azure, BareMetal} {
		target := section.Target()
		names := section.Names()
		if len(names) == 0 {
			t.Fatalf("no SKUs for %s", target)
		}
		for _, n := range names {
			s, err := section.SKU(nil, n)
			if err != nil || s.Target != target || s.Name != n {
				t.Fatalf("SKU(%s, %s) = %+v, %v", target, n, s, err)
			}
			if s.GPUs < 1 || s.VCPUs < 1 || s.MemoryGiB < 1 || s.GPU.MemoryGB < 1 || s.GPU.Model == "" || s.GPU.Label == "" || s.Family == "" {
				t.Errorf("%s: incomplete entry %+v", n, s)
			}
			// NVIDIA's CUDA GPUs list: V100 7.0, T4 7.5, A100 8.0, A10 8.6,
			// H100/H200 9.0; MIG came with 8.0
			if cc := s.GPU.ComputeCapability; cc < 70 || cc > 100 || (s.GPU.MIG && cc < 80) {
				t.Errorf("%s: compute capability %d", n, cc)
			}
			if target == AKS && !strings.HasPrefix(n, "Standard_N") {
				t.Errorf("%s: not an Azure N-series size name", n)
			}
		}
	}
}

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
			s, err := Azure.SKU(nil, tc.name)
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

func TestBareMetalProfiles(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"a100-80gb-x8", "h100-80gb-x8"} {
		s, err := BareMetal.SKU(nil, n)
		if err != nil || s.GPUs != 8 || s.GPU.MemoryGB != 80 || !s.GPU.MIG {
			t.Errorf("%s: got %+v, %v", n, s, err)
		}
	}
	if _, err := BareMetal.SKU(nil, "Standard_NC24ads_A100_v4"); err == nil {
		t.Error("an Azure size must not be a bare-metal profile")
	}
	if _, err := Azure.SKU(nil, "h100-80gb-x8"); err == nil {
		t.Error("a bare-metal profile must not be an Azure size")
	}
}

// MIG instance names as NVIDIA publishes them for each GPU.
func TestMIGSlices(t *testing.T) {
	t.Parallel()
	tests := []struct {
		gpu     GPU
		profile MIGProfile
		name    string
		perGPU  int
	}{
		{a100PCIe80, "MIG1g", "1g.10gb", 7},
		{a100PCIe80, "MIG2g", "2g.20gb", 3},
		{a100PCIe80, "MIG3g", "3g.40gb", 2},
		{a100PCIe80, "MIG4g", "4g.40gb", 1},
		{a100PCIe80, "MIG7g", "7g.80gb", 1},
		{a100SXM40, "MIG1g", "1g.5gb", 7},
		{a100SXM40, "MIG3g", "3g.20gb", 2},
		{h100NVL, "MIG1g", "1g.12gb", 7},
		{h100NVL, "MIG3g", "3g.47gb", 2},
		{h200SXM, "MIG1g", "1g.18gb", 7},
		{h200SXM, "MIG2g", "2g.35gb", 3},
		{h200SXM, "MIG7g", "7g.141gb", 1},
	}
	for _, tc := range tests {
		s, ok := tc.gpu.Slice(tc.profile)
		if !ok || s.Name != tc.name || s.PerGPU != tc.perGPU {
			t.Errorf("%s %s: got %+v, %v; want %s x%d", tc.gpu.Model, tc.profile, s, ok, tc.name, tc.perGPU)
		}
	}
	if _, ok := t4.Slice("MIG1g"); ok {
		t.Error("T4 has no MIG")
	}
	if _, ok := a100PCIe80.Slice("MIG5g"); ok || ValidMIG("MIG5g") {
		t.Error("MIG5g is not a profile")
	}
}

// An unknown name is reported at its key path with every known name.
func TestUnknownSKU(t *testing.T) {
	t.Parallel()
	_, err := BareMetal.SKU(field.NewPath("pools").Index(0).Child("sku"), "h200-x8")
	want := `pools[0].sku: unknown for target natron; known: a100-40gb-x8, a100-80gb-x4, a100-80gb-x8, h100-80gb-x4, h100-80gb-x8, got "h200-x8"`
	if err == nil || fielderr.Message(err) != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// The data sheet figures, and what follows from them: every GPU has its
// bandwidth and 16-bit throughput; FP8 Tensor Cores exactly where the
// compute capability is 8.9 or newer (Ada, Hopper), which is also where
// vLLM's fp8 quantization computes in FP8; no BF16 before Ampere; and
// every node of 8 data-center GPUs on an HGX or ND board is NVLinked.
func TestGPUSpeeds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sku       string
		bandwidth int
		bf16, fp8 float64
		link      string
	}{
		{"h100-80gb-x8", 3350, 989.5, 1979, "NVLink"},
		{"a100-80gb-x8", 2039, 312, 0, "NVLink"},
		{"a100-40gb-x8", 1555, 312, 0, "NVLink"},
	} {
		s, err := BareMetal.SKU(nil, tc.sku)
		if err != nil {
			t.Fatal(err)
		}
		if s.GPU.BandwidthGBps != tc.bandwidth || s.GPU.BF16TFLOPS != tc.bf16 || s.GPU.FP8TFLOPS != tc.fp8 || s.Link.Kind != tc.link {
			t.Errorf("%s: %+v %+v", tc.sku, s.GPU.Speed, s.Link)
		}
	}
	for _, section := range []Section{Azure, BareMetal} {
		for _, s := range section.SKUs() {
			g := s.GPU
			switch {
			case g.BandwidthGBps <= 0 || g.FP16TFLOPS <= 0 || g.DataSheet == "":
				t.Errorf("%s: incomplete speed %+v", s.Name, g.Speed)
			case (g.FP8TFLOPS > 0) != (g.ComputeCapability >= 89) || g.RunsNatively("fp8") != (g.FP8TFLOPS > 0):
				t.Errorf("%s: FP8 %v TFLOPS, formats %v, compute capability %d", s.Name, g.FP8TFLOPS, g.Formats, g.ComputeCapability)
			case (g.BF16TFLOPS > 0) != (g.ComputeCapability >= 80):
				t.Errorf("%s: BF16 %v TFLOPS at compute capability %d", s.Name, g.BF16TFLOPS, g.ComputeCapability)
			case s.Link.GBps <= 0 || (s.GPUs == 8 && s.Link.Kind != "NVLink"):
				t.Errorf("%s: link %+v for %d GPUs", s.Name, s.Link, s.GPUs)
			}
		}
	}
}
