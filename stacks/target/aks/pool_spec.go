package aks

import (
	containerservice "github.com/pulumi/pulumi-azure-native-sdk/containerservice/v2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/kube"
)

// DefaultOSDiskSizeGB fits the OS plus a few multi-GB inference images
// (CUDA base images alone are 5-10 GB) in the container image cache.
const DefaultOSDiskSizeGB = 256

// immutable are agent pool fields Azure cannot change in place: a change
// replaces the pool, and preview must show that as a replacement.
var immutable = []string{
	"vmSize", "gpuInstanceProfile", "scaleSetPriority", "scaleSetEvictionPolicy",
	"availabilityZones", "osDiskSizeGB", "osDiskType", "osType", "agentPoolName",
}

// AgentPoolArgs maps a resolved pool to the agent pool's inputs. Pure:
// same pool, same args.
func AgentPoolArgs(cluster Cluster, pool gpupool.Resolved) *containerservice.AgentPoolArgs {
	spec, opts := pool.Spec, poolOptions(pool.Spec)
	disk := opts.OSDiskSizeGB
	if disk == 0 {
		disk = DefaultOSDiskSizeGB
	}
	args := &containerservice.AgentPoolArgs{
		ResourceGroupName: pulumi.String(cluster.ResourceGroup),
		ResourceName:      pulumi.String(cluster.ClusterName),
		AgentPoolName:     pulumi.String(spec.Name),
		Mode:              pulumi.String("User"),
		OsType:            pulumi.String("Linux"),
		Type:              pulumi.String("VirtualMachineScaleSets"),
		VmSize:            pulumi.String(pool.SKU.Name),
		// Managed, not ephemeral: a 256 GB ephemeral OS disk does not fit
		// the cache disk of every GPU size, and that fails only at create.
		OsDiskType:        pulumi.String("Managed"),
		OsDiskSizeGB:      pulumi.Int(disk),
		NodeTaints:        pulumi.StringArray{pulumi.String(gpupool.GPUTaint)},
		NodeLabels:        pulumi.ToStringMap(gpupool.NodeLabels(pool)),
		EnableAutoScaling: pulumi.Bool(true),
		MinCount:          pulumi.Int(spec.MinNodes),
		MaxCount:          pulumi.Int(spec.MaxNodes),
		// Only the initial size: the autoscaler owns the count afterwards,
		// and the component ignores later differences.
		Count: pulumi.Int(spec.MinNodes),
		Tags: pulumi.StringMap{
			"managed-by": pulumi.String(kube.ManagedBy),
			"gpu-pool":   pulumi.String(spec.Name),
		},
	}
	if spec.Spot {
		args.ScaleSetPriority = pulumi.String("Spot")
		args.ScaleSetEvictionPolicy = pulumi.String("Delete")
		price := -1.0 // pay up to the on-demand price, never evicted for price
		if opts.SpotMaxPrice != nil {
			price = *opts.SpotMaxPrice
		}
		args.SpotMaxPrice = pulumi.Float64(price)
	}
	if spec.MIGProfile != "" {
		args.GpuInstanceProfile = pulumi.String(string(spec.MIGProfile))
	}
	if len(opts.Zones) > 0 {
		args.AvailabilityZones = pulumi.ToStringArray(opts.Zones)
	}
	return args
}
