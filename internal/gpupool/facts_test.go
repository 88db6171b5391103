package gpupool_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

func TestNewFacts(t *testing.T) {
	t.Parallel()
	gpuTol := gpupool.Toleration{Key: "nvidia.com/gpu", Operator: "Equal", Value: "present", Effect: "NoSchedule"}
	spotTol := gpupool.Toleration{Key: "kubernetes.azure.com/scalesetpriority", Operator: "Equal", Value: "spot", Effect: "NoSchedule"}
	tests := []struct {
		name   string
		target catalog.Target
		spec   gpupool.Spec
		want   gpupool.Facts
	}{
		{
			name: "on-demand AKS pool", target: aks.Name,
			spec: gpupool.Spec{Name: "a100", SKU: "Standard_NC48ads_A100_v4", MaxNodes: 4},
			want: gpupool.Facts{
				Name: "a100", Target: "aks", SKU: "Standard_NC48ads_A100_v4", GPUModel: "NVIDIA A100 80GB PCIe", ComputeCapability: 80,
				GPUsPerNode: 2, GPUMemoryGB: 80, GPUMemoryMiB: 81920, GPUResource: "nvidia.com/gpu", GPUResourcesPerNode: 2, MemoryPerGPUResourceGB: 80, MaxNodes: 4,
				NodeSelector: map[string]string{"gpu.natron.cloud/pool": "a100"},
				Tolerations:  []gpupool.Toleration{gpuTol},
			},
		},
		{
			name: "spot AKS pool needs the spot toleration too", target: aks.Name,
			spec: gpupool.Spec{Name: "h100spot", SKU: "Standard_NC80adis_H100_v5", MinNodes: 1, MaxNodes: 8, Spot: true},
			want: gpupool.Facts{
				Name: "h100spot", Target: "aks", SKU: "Standard_NC80adis_H100_v5", GPUModel: "NVIDIA H100 NVL", ComputeCapability: 90,
				GPUsPerNode: 2, GPUMemoryGB: 94, GPUMemoryMiB: 95830, GPUResource: "nvidia.com/gpu", GPUResourcesPerNode: 2, MemoryPerGPUResourceGB: 94, MinNodes: 1, MaxNodes: 8, Spot: true,
				NodeSelector: map[string]string{"gpu.natron.cloud/pool": "h100spot"},
				Tolerations:  []gpupool.Toleration{gpuTol, spotTol},
			},
		},
		{
			name: "MIG pool on bare metal", target: natron.Name,
			spec: gpupool.Spec{Name: "train", SKU: "a100-80gb-x8", MaxNodes: 2, MIGProfile: "MIG1g"},
			want: gpupool.Facts{
				Name: "train", Target: "natron", SKU: "a100-80gb-x8", GPUModel: "NVIDIA A100 80GB SXM4", ComputeCapability: 80,
				GPUsPerNode: 8, GPUMemoryGB: 80, GPUMemoryMiB: 81920, MIGProfile: "MIG1g", MIGInstance: "1g.10gb", MIGInstanceMiB: 9728,
				GPUResource: "nvidia.com/gpu", GPUResourcesPerNode: 56, MemoryPerGPUResourceGB: 10, MaxNodes: 2,
				DevicePluginConfig: "train", // the single strategy on its nodes
				NodeSelector:       map[string]string{"gpu.natron.cloud/pool": "train"},
				Tolerations:        []gpupool.Toleration{gpuTol},
			},
		},
		{
			name: "time-sliced pool shares each GPU's memory", target: natron.Name,
			spec: gpupool.Spec{Name: "notebook", SKU: "a100-80gb-x4", MaxNodes: 2, TimeSlicing: 4},
			want: gpupool.Facts{
				Name: "notebook", Target: "natron", SKU: "a100-80gb-x4", GPUModel: "NVIDIA A100 80GB SXM4", ComputeCapability: 80,
				GPUsPerNode: 4, GPUMemoryGB: 80, GPUMemoryMiB: 81920, GPUResource: "nvidia.com/gpu", GPUResourcesPerNode: 16, MemoryPerGPUResourceGB: 20, TimeSlicing: 4, MaxNodes: 2,
				DevicePluginConfig: "notebook",
				NodeSelector:       map[string]string{"gpu.natron.cloud/pool": "notebook"},
				Tolerations:        []gpupool.Toleration{gpuTol},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := gpupool.NewFacts(tc.spec, mustSKU(t, tc.target, tc.spec.SKU), &spotTol)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NewFacts mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeLabelsProgramWins(t *testing.T) {
	t.Parallel()
	sku := mustSKU(t, aks.Name, "Standard_NC24ads_A100_v4")
	// Validation rejects this; the mapping must still never let a user label
	// move a node out of its pool's selector.
	got := gpupool.NodeLabels(gpupool.Resolve(gpupool.Spec{Name: "a100", Labels: map[string]string{gpupool.LabelPool: "other", "team": "ml"}}, sku, nil))
	if got[gpupool.LabelPool] != "a100" || got["team"] != "ml" || got[gpupool.LabelGPUPresent] != "true" {
		t.Fatalf("NodeLabels = %v", got)
	}
	if _, ok := got["cluster-api/accelerator"]; ok {
		t.Error("the Cluster API accelerator label is for bare metal only")
	}
}

func TestReservedLabel(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]bool{
		"team":                             false,
		"acme.example/team":                false,
		"gpu.natron.cloud/pool":            true,
		"nvidia.com/gpu.present":           true,
		"kubernetes.azure.com/mode":        true,
		"node.kubernetes.io/instance-type": true,
		"node-role.kubernetes.io/gpu":      true,
		"topology.k8s.io/zone":             true,
		"cluster-api/accelerator":          true,
		"cluster.x-k8s.io/cluster-name":    true,
		"metal3.io/uuid":                   true,
		"notnvidia.com/x":                  false,
	} {
		if got := gpupool.ReservedLabel(key, []string{"kubernetes.azure.com", "cluster-api", "x-k8s.io", "metal3.io"}); got != want {
			t.Errorf("ReservedLabel(%q) = %v, want %v", key, got, want)
		}
	}
}

func mustSKU(t *testing.T, target catalog.Target, name string) catalog.SKU {
	t.Helper()
	section := map[catalog.Target]catalog.Section{aks.Name: aks.Sizes, natron.Name: natron.Profiles}[target]
	s, err := section.SKU(nil, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
