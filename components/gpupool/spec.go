// Package gpupool builds GPU node pools on AKS and on bare metal (Cluster
// API), and describes each pool as plain facts for the layers above.
package gpupool

import (
	"slices"
	"strings"

	"github.com/natron/gpu-node-pools/components/catalog"
)

// Spec is one pool as written in config (gpu-node-pools:pools[i]). Field names
// are the config contract: keep them stable.
type Spec struct {
	Name         string             `json:"name"`
	SKU          string             `json:"sku"`
	MinNodes     int                `json:"minNodes"`
	MaxNodes     int                `json:"maxNodes"`
	Spot         bool               `json:"spot,omitempty"`
	SpotMaxPrice *float64           `json:"spotMaxPrice,omitempty"`
	MIGProfile   catalog.MIGProfile `json:"migProfile,omitempty"`
	Zones        []string           `json:"zones,omitempty"`
	OSDiskSizeGB int                `json:"osDiskSizeGB,omitempty"`
	Labels       map[string]string  `json:"labels,omitempty"`
	// TimeSlicing shares each GPU between this many pods (0: no sharing).
	TimeSlicing int `json:"timeSlicing,omitempty"`
}

// DefaultOSDiskSizeGB fits the OS plus a few multi-GB inference images
// (CUDA base images alone are 5-10 GB) in the container image cache.
const DefaultOSDiskSizeGB = 256

// Labels and taints the program owns. Users may not set these keys.
const (
	// LabelPool names the pool; it is the node selector for the pool.
	LabelPool = "gpu.natron.cloud/pool"
	// LabelGPUModel is the catalog's short GPU name, e.g. "a100-80gb".
	LabelGPUModel = "gpu.natron.cloud/gpu-model"
	// LabelGPUCount is the number of physical GPUs per node.
	LabelGPUCount = "gpu.natron.cloud/gpu-count"
	// LabelSKU is the VM size or bare-metal profile.
	LabelSKU = "gpu.natron.cloud/sku"
	// LabelGPUPresent is what the NVIDIA device plugin chart selects on.
	LabelGPUPresent = "nvidia.com/gpu.present"
	// LabelMIGConfig asks the GPU operator's MIG manager for a layout
	// (bare metal; AKS partitions through the agent pool's profile instead).
	LabelMIGConfig = "nvidia.com/mig.config"
	// LabelDevicePluginConfig picks the node's entry in the device plugin's
	// config map (time-slicing pools get their own).
	LabelDevicePluginConfig = "nvidia.com/device-plugin.config"
	// LabelAccelerator is set at kubelet start so the Cluster API autoscaler
	// does not scale out again while the device plugin starts.
	LabelAccelerator = "cluster-api/accelerator"
	// LabelHardwareProfile is the BareMetalHost label a site's inventory sets
	// to the host's hardware profile; pools select hosts by it.
	LabelHardwareProfile = "gpu.natron.cloud/hardware-profile"

	// GPUTaintKey etc. make up nvidia.com/gpu=present:NoSchedule.
	GPUTaintKey    = "nvidia.com/gpu"
	GPUTaintValue  = "present"
	GPUTaintEffect = "NoSchedule"
	// SpotTaintKey is the taint AKS adds by itself to every spot node.
	SpotTaintKey   = "kubernetes.azure.com/scalesetpriority"
	SpotTaintValue = "spot"
)

// GPUTaint is the taint every GPU node carries, in kubectl notation.
const GPUTaint = GPUTaintKey + "=" + GPUTaintValue + ":" + GPUTaintEffect

// reservedLabelDomains are label key prefixes (and their subdomains) users
// may not set on a pool: the program's own, NVIDIA's (feature discovery and
// the GPU operator own them), Cluster API's and Metal3's, and those kubelet
// or AKS refuse or reserve.
var reservedLabelDomains = []string{
	"gpu.natron.cloud", "nvidia.com", "cluster-api", "x-k8s.io", "metal3.io",
	"kubernetes.azure.com", "kubernetes.io", "k8s.io",
}

// ReservedLabel reports whether a label key belongs to the program or the
// platform, and so may not be set through a pool's labels.
func ReservedLabel(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range reservedLabelDomains {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}

// ReservedLabelDomains lists the reserved prefixes, for error messages.
func ReservedLabelDomains() []string { return slices.Clone(reservedLabelDomains) }
