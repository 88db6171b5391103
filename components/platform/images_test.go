package platform_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
)

// operandImages are the images the GPU operator runs from its
// ClusterPolicy: repository/image:version of each enabled operand (the
// operator's controller deploys them; see the chart's
// templates/clusterpolicy.yaml at v26.7.0).
func operandImages(objs []map[string]any) []string {
	var out []string
	for _, cp := range ofKind(objs, "ClusterPolicy") {
		spec, _ := get(cp, "spec").(map[string]any)
		for _, v := range spec {
			operand, ok := v.(map[string]any)
			if !ok || operand["image"] == nil || operand["enabled"] == false {
				continue
			}
			repo, _ := operand["repository"].(string)
			if repo == "" {
				continue // an image given whole, or none for this operand
			}
			out = append(out, fmt.Sprintf("%s/%s:%v", repo, operand["image"], operand["version"]))
		}
	}
	return out
}

// Each platform chart's image list is what it really pulls with the
// program's values: every image the rendered chart (and, for the GPU
// operator, its ClusterPolicy's operands) runs is covered by one of the
// chart's images, as the registry policy matches them, and every listed
// image is pulled. The registry check of a stack's own images reads this
// list.
func TestChartImagesArePulled(t *testing.T) {
	t.Parallel()
	aks, aksPools := aksLayer(t)
	metal, metalPools := bareMetalLayer(t)
	checked := 0
	for _, layer := range []struct {
		spec  platform.Spec
		pools []gpupool.Facts
	}{{aks, aksPools}, {metal, metalPools}} {
		for _, r := range platform.Releases(layer.spec, layer.pools, helm.Source{}) {
			objs := render(t, r)
			pulled := append(helmtest.PodImages(objs), operandImages(objs)...)
			if len(pulled) == 0 {
				t.Fatalf("%s rendered no images", r.Name)
			}
			for _, img := range pulled {
				if !policy.Allows(r.Chart.Images, img) {
					t.Errorf("%s pulls %s, which its image list %v does not cover", r.Name, img, r.Chart.Images)
				}
			}
			for _, listed := range r.Chart.Images {
				if !slices.ContainsFunc(pulled, func(img string) bool { return policy.Allows([]string{listed}, img) }) {
					t.Errorf("%s lists %s, which it does not pull (pulls %s)", r.Name, listed, strings.Join(pulled, ", "))
				}
			}
			checked++
		}
	}
	if checked != 3 {
		t.Fatalf("checked %d charts, want the device plugin, the DCGM exporter and the GPU operator", checked)
	}
}
