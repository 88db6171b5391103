package registry

import "testing"

// Every target's catalog section is its own and complete.
func TestEverySKUIsComplete(t *testing.T) {
	t.Parallel()
	for _, tg := range All() {
		section := tg.Catalog()
		target := section.Target()
		if target != tg.Name() {
			t.Errorf("target %s's catalog section is %s's", tg.Name(), target)
		}
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
		}
	}
}

// The data sheet figures, and what follows from them: every GPU has its
// bandwidth and 16-bit throughput; FP8 Tensor Cores exactly where the
// compute capability is 8.9 or newer (Ada, Hopper), which is also where
// vLLM's fp8 quantization computes in FP8; no BF16 before Ampere; and
// every node of 8 data-center GPUs on an HGX or ND board is NVLinked.
func TestEveryGPUSpeed(t *testing.T) {
	t.Parallel()
	for _, tg := range All() {
		for _, s := range tg.Catalog().SKUs() {
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

// A node shape name belongs to one target: the sku key means one thing.
func TestSKUNamesAreOneTargets(t *testing.T) {
	t.Parallel()
	owner := map[string]string{}
	for _, tg := range All() {
		for _, n := range tg.Catalog().Names() {
			if o, ok := owner[n]; ok {
				t.Errorf("%s is in both %s's and %s's catalog", n, o, tg.Name())
			}
			owner[n] = string(tg.Name())
		}
	}
	if len(owner) < 2 {
		t.Fatalf("only %d node shapes in the registry", len(owner))
	}
}
