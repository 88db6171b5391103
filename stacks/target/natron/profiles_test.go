package natron

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
)

func TestBareMetalProfiles(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"a100-80gb-x8", "h100-80gb-x8"} {
		s, err := Profiles.SKU(nil, n)
		if err != nil || s.GPUs != 8 || s.GPU.MemoryGB != 80 || !s.GPU.MIG {
			t.Errorf("%s: got %+v, %v", n, s, err)
		}
	}
}

// An unknown name is reported at its key path with every known name.
func TestUnknownSKU(t *testing.T) {
	t.Parallel()
	_, err := Profiles.SKU(field.NewPath("pools").Index(0).Child("sku"), "h200-x8")
	want := `pools[0].sku: unknown for target natron; known: a100-40gb-x8, a100-80gb-x4, a100-80gb-x8, h100-80gb-x4, h100-80gb-x8, got "h200-x8"`
	if err == nil || fielderr.Message(err) != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// The data sheet figures of the HGX profiles.
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
		s, err := Profiles.SKU(nil, tc.sku)
		if err != nil {
			t.Fatal(err)
		}
		if s.GPU.BandwidthGBps != tc.bandwidth || s.GPU.BF16TFLOPS != tc.bf16 || s.GPU.FP8TFLOPS != tc.fp8 || s.Link.Kind != tc.link {
			t.Errorf("%s: %+v %+v", tc.sku, s.GPU.Speed, s.Link)
		}
	}
}
