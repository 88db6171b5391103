package aks

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	containerservice "github.com/pulumi/pulumi-azure-native-sdk/containerservice/v2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/gpupool"
)

func TestAgentPoolArgs(t *testing.T) {
	t.Parallel()
	cluster := Cluster{ResourceGroup: "rg-acme-prod", ClusterName: "aks-acme-prod"}
	price := 0.85
	base := func(name, sku string, min, max, disk int, labels pulumi.StringMap) *containerservice.AgentPoolArgs {
		return &containerservice.AgentPoolArgs{
			ResourceGroupName: pulumi.String("rg-acme-prod"),
			ResourceName:      pulumi.String("aks-acme-prod"),
			AgentPoolName:     pulumi.String(name),
			Mode:              pulumi.String("User"),
			OsType:            pulumi.String("Linux"),
			Type:              pulumi.String("VirtualMachineScaleSets"),
			VmSize:            pulumi.String(sku),
			OsDiskType:        pulumi.String("Managed"),
			OsDiskSizeGB:      pulumi.Int(disk),
			NodeTaints:        pulumi.StringArray{pulumi.String("nvidia.com/gpu=present:NoSchedule")},
			NodeLabels:        labels,
			EnableAutoScaling: pulumi.Bool(true),
			MinCount:          pulumi.Int(min),
			MaxCount:          pulumi.Int(max),
			Count:             pulumi.Int(min),
			Tags:              pulumi.StringMap{"managed-by": pulumi.String("gpu-node-pools"), "gpu-pool": pulumi.String(name)},
		}
	}
	tests := []struct {
		name string
		spec gpupool.Spec
		want func() *containerservice.AgentPoolArgs
	}{
		{
			name: "on-demand A100 with zones and extra label",
			spec: gpupool.Spec{Name: "a100", SKU: "Standard_NC24ads_A100_v4", MinNodes: 0, MaxNodes: 4, Options: &PoolOptions{Zones: []string{"1", "2"}}, Labels: map[string]string{"team": "ml"}},
			want: func() *containerservice.AgentPoolArgs {
				a := base("a100", "Standard_NC24ads_A100_v4", 0, 4, 256, pulumi.StringMap{
					"gpu.natron.cloud/pool":      pulumi.String("a100"),
					"gpu.natron.cloud/gpu-model": pulumi.String("a100-80gb"),
					"gpu.natron.cloud/gpu-count": pulumi.String("1"),
					"gpu.natron.cloud/sku":       pulumi.String("Standard_NC24ads_A100_v4"),
					"nvidia.com/gpu.present":     pulumi.String("true"),
					"team":                       pulumi.String("ml"),
				})
				a.AvailabilityZones = pulumi.StringArray{pulumi.String("1"), pulumi.String("2")}
				return a
			},
		},
		{
			name: "spot H100 with a max price",
			spec: gpupool.Spec{Name: "h100spot", SKU: "Standard_NC40ads_H100_v5", MinNodes: 1, MaxNodes: 8, Spot: true, Options: &PoolOptions{SpotMaxPrice: &price}},
			want: func() *containerservice.AgentPoolArgs {
				a := base("h100spot", "Standard_NC40ads_H100_v5", 1, 8, 256, pulumi.StringMap{
					"gpu.natron.cloud/pool":      pulumi.String("h100spot"),
					"gpu.natron.cloud/gpu-model": pulumi.String("h100-94gb"),
					"gpu.natron.cloud/gpu-count": pulumi.String("1"),
					"gpu.natron.cloud/sku":       pulumi.String("Standard_NC40ads_H100_v5"),
					"nvidia.com/gpu.present":     pulumi.String("true"),
				})
				a.ScaleSetPriority = pulumi.String("Spot")
				a.ScaleSetEvictionPolicy = pulumi.String("Delete")
				a.SpotMaxPrice = pulumi.Float64(0.85)
				return a
			},
		},
		{
			name: "spot without a price pays up to on-demand",
			spec: gpupool.Spec{Name: "t4", SKU: "Standard_NC4as_T4_v3", MaxNodes: 2, Spot: true},
			want: func() *containerservice.AgentPoolArgs {
				a := base("t4", "Standard_NC4as_T4_v3", 0, 2, 256, pulumi.StringMap{
					"gpu.natron.cloud/pool":      pulumi.String("t4"),
					"gpu.natron.cloud/gpu-model": pulumi.String("t4-16gb"),
					"gpu.natron.cloud/gpu-count": pulumi.String("1"),
					"gpu.natron.cloud/sku":       pulumi.String("Standard_NC4as_T4_v3"),
					"nvidia.com/gpu.present":     pulumi.String("true"),
				})
				a.ScaleSetPriority = pulumi.String("Spot")
				a.ScaleSetEvictionPolicy = pulumi.String("Delete")
				a.SpotMaxPrice = pulumi.Float64(-1)
				return a
			},
		},
		{
			name: "ND-series with MIG and a bigger disk",
			spec: gpupool.Spec{Name: "nd96", SKU: "Standard_ND96amsr_A100_v4", MaxNodes: 2, MIGProfile: "MIG3g", Options: &PoolOptions{OSDiskSizeGB: 512}},
			want: func() *containerservice.AgentPoolArgs {
				a := base("nd96", "Standard_ND96amsr_A100_v4", 0, 2, 512, pulumi.StringMap{
					"gpu.natron.cloud/pool":      pulumi.String("nd96"),
					"gpu.natron.cloud/gpu-model": pulumi.String("a100-80gb"),
					"gpu.natron.cloud/gpu-count": pulumi.String("8"),
					"gpu.natron.cloud/sku":       pulumi.String("Standard_ND96amsr_A100_v4"),
					"nvidia.com/gpu.present":     pulumi.String("true"),
					// its own device plugin config: the single MIG strategy
					"nvidia.com/device-plugin.config": pulumi.String("nd96"),
				})
				a.GpuInstanceProfile = pulumi.String("MIG3g")
				return a
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := AgentPoolArgs(cluster, resolved(t, tc.spec))
			if diff := cmp.Diff(tc.want(), got); diff != "" {
				t.Errorf("AgentPoolArgs mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// resolved is a pool as the plan resolves it on AKS (the aks package's own
// tests cannot use pooltest, which imports it).
func resolved(t *testing.T, spec gpupool.Spec) gpupool.Resolved {
	t.Helper()
	sku, err := Sizes.SKU(nil, spec.SKU)
	if err != nil {
		t.Fatal(err)
	}
	return gpupool.Resolve(spec, sku, Target{}.SpotToleration())
}
