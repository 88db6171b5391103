package serving

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/models"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
)

// A model named from the catalog gets every other value from it and its
// pool; values the config gives are kept.
func TestWithDefaults(t *testing.T) {
	t.Parallel()
	entry := func(name string) *models.Card {
		m, ok := models.Known.Lookup(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		return &m
	}
	h100x8 := pooltest.Pool(t, pooltest.Natron, "h100-80gb-x8", 2, "")
	a100x1 := pooltest.Pool(t, pooltest.AKS, "Standard_NC24ads_A100_v4", 4, "")
	nvl2 := pooltest.Pool(t, pooltest.AKS, "Standard_NC80adis_H100_v5", 2, "")
	type want struct {
		params                             float64
		quantization, dtype                string
		tp, maxModelLen, minR, maxR, queue int
		util                               float64
		estimatedFrom                      string
	}
	for _, tc := range []struct {
		name  string
		spec  ModelSpec
		entry *models.Card
		pool  gpupool.Facts
		want  want
	}{
		{"8B on one A100: its native 128k context fits", ModelSpec{CatalogModel: "llama-3.1-8b"}, entry("llama-3.1-8b"), a100x1,
			want{8.03, "", "auto", 1, 131072, 1, 4, 5, 0.9, ""}},
		{"70B on H100s: tensor parallel 4, the smallest that fits", ModelSpec{CatalogModel: "llama-3.1-70b"}, entry("llama-3.1-70b"), h100x8,
			want{70.6, "", "auto", 4, 131072, 1, 4, 5, 0.9, ""}},
		{"70B on two H100 NVL: the context capped by memory", ModelSpec{CatalogModel: "llama-3.1-70b"}, entry("llama-3.1-70b"), nvl2,
			want{70.6, "", "auto", 2, 77824, 1, 2, 5, 0.9, ""}},
		{"an FP8 checkpoint keeps its quantization", ModelSpec{CatalogModel: "deepseek-v3"}, entry("deepseek-v3"), h100x8,
			want{671, "fp8", "auto", 8, 163840, 1, 2, 5, 0.9, ""}},
		{"given values stay", ModelSpec{CatalogModel: "llama-3.1-8b", TensorParallel: 2, MaxModelLen: 4096, GPUMemoryUtilization: 0.8,
			MinReplicas: new(0), MaxReplicas: 3, QueueDepthTarget: 2, Dtype: "bfloat16"}, entry("llama-3.1-8b"), h100x8,
			want{8.03, "", "bfloat16", 2, 4096, 0, 3, 2, 0.8, ""}},
		{"a model by size only: the shape estimated", ModelSpec{ParametersB: 7, MaxModelLen: 8192}, nil, a100x1,
			want{7, "", "auto", 1, 8192, 1, 4, 5, 0.9, "mistral-7b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, from := tc.spec.WithDefaults(tc.entry, tc.pool)
			have := want{got.ParametersB, got.Quantization, got.Dtype, got.TensorParallel, got.MaxModelLen, got.Replicas(),
				got.MaxReplicas, got.QueueDepthTarget, got.GPUMemoryUtilization, from}
			if diff := cmp.Diff(tc.want, have, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("defaults (-want +got):\n%s", diff)
			}
			if tc.entry != nil && (got.Shape == nil || *got.Shape != tc.entry.Shape) {
				t.Errorf("shape %+v, want the catalog's %+v", got.Shape, tc.entry.Shape)
			}
			// what the defaults decide fits, unless nothing would: DeepSeek V3
			// (625 GiB in FP8) needs more than one H100 node
			if errs := fit.Fit(nil, got.Model(), tc.pool); len(errs) != 0 && tc.name != "an FP8 checkpoint keeps its quantization" {
				t.Errorf("the defaults do not fit: %v", errs)
			}
		})
	}
}
