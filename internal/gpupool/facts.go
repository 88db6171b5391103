package gpupool

import (
	"maps"
	"strconv"

	"github.com/natron/gpu-node-pools/internal/catalog"
)

// Toleration is a pod toleration, in the shape of core/v1 Toleration.
type Toleration struct {
	Key      string `json:"key"`
	Operator string `json:"operator"`
	Value    string `json:"value"`
	Effect   string `json:"effect"`
}

// Facts is what the platform layer, model serving and policies need to know
// about a pool. It is plain data: everything here is known at config time.
type Facts struct {
	Name     string         `json:"name"`
	Target   catalog.Target `json:"target"`
	SKU      string         `json:"sku"`
	GPUModel string         `json:"gpuModel"`
	// ComputeCapability is the GPU's CUDA compute capability (80: 8.0).
	ComputeCapability int `json:"computeCapability"`
	// GPUsPerNode counts physical GPUs.
	GPUsPerNode int `json:"gpusPerNode"`
	// GPUMemoryGB is the memory of one physical GPU, as the data sheet
	// gives it.
	GPUMemoryGB int `json:"gpuMemoryGB"`
	// GPUMemoryMiB is the memory of one physical GPU as the driver reports
	// it (catalog.GPU.TotalMiB), what CUDA's total starts from.
	GPUMemoryMiB int `json:"gpuMemoryMiB"`
	// MIGProfile is empty when the GPUs are not partitioned.
	MIGProfile catalog.MIGProfile `json:"migProfile,omitempty"`
	// MIGInstance is NVIDIA's name of one partition, e.g. "3g.40gb".
	MIGInstance string `json:"migInstance,omitempty"`
	// MIGInstanceMiB is the memory the driver gives one partition
	// (catalog.MIGSlice.MemoryMiB), less than its name says.
	MIGInstanceMiB int `json:"migInstanceMiB,omitempty"`
	// GPUResource is the extended resource a node of the pool advertises
	// and a pod requests to run here. MIG pools run the device plugin's
	// single strategy on their own nodes (each has a device plugin config
	// of its own), so their instances are nvidia.com/gpu too.
	GPUResource string `json:"gpuResource"`
	// GPUResourcesPerNode is how many GPUResource a node advertises
	// (physical GPUs times MIG instances per GPU, times time-slicing
	// replicas).
	GPUResourcesPerNode int `json:"gpuResourcesPerNode"`
	// MemoryPerGPUResourceGB is the memory behind one nvidia.com/gpu.
	MemoryPerGPUResourceGB int `json:"memoryPerGpuResourceGB"`
	// TimeSlicing is how many pods share one GPU (0: not shared).
	TimeSlicing int `json:"timeSlicing,omitempty"`
	// DevicePluginConfig is the device plugin config its nodes select
	// (LabelDevicePluginConfig), "" for the default: MIG pools (the single
	// strategy) and time-slicing pools have their own, named after them.
	DevicePluginConfig string `json:"devicePluginConfig,omitempty"`
	MinNodes           int    `json:"minNodes"`
	MaxNodes           int    `json:"maxNodes"`
	Spot               bool   `json:"spot"`
	// NodeSelector lands a pod on this pool and no other.
	NodeSelector map[string]string `json:"nodeSelector"`
	// Tolerations are what a pod needs to run here.
	Tolerations []Toleration `json:"tolerations"`
}

// GPUToleration tolerates the taint every GPU node carries.
var GPUToleration = Toleration{Key: GPUTaintKey, Operator: "Equal", Value: GPUTaintValue, Effect: GPUTaintEffect}

// NewFacts derives a pool's facts from its validated spec and SKU; spot
// tolerates the taint the target puts on its spot nodes (nil: none).
func NewFacts(spec Spec, sku catalog.SKU, spot *Toleration) Facts {
	p := Facts{
		Name:                   spec.Name,
		Target:                 sku.Target,
		SKU:                    sku.Name,
		GPUModel:               sku.GPU.Model,
		ComputeCapability:      sku.GPU.ComputeCapability,
		GPUsPerNode:            sku.GPUs,
		GPUMemoryGB:            sku.GPU.MemoryGB,
		GPUMemoryMiB:           sku.GPU.TotalMiB(),
		GPUResource:            GPUResourceName,
		GPUResourcesPerNode:    sku.GPUs,
		MemoryPerGPUResourceGB: sku.GPU.MemoryGB,
		MinNodes:               spec.MinNodes,
		MaxNodes:               spec.MaxNodes,
		Spot:                   spec.Spot,
		NodeSelector:           map[string]string{LabelPool: spec.Name},
		Tolerations:            []Toleration{GPUToleration},
	}
	if slice, ok := sku.GPU.Slice(spec.MIGProfile); ok {
		p.MIGProfile = spec.MIGProfile
		p.MIGInstance = slice.Name
		p.MIGInstanceMiB = slice.MemoryMiB
		p.GPUResourcesPerNode = sku.GPUs * slice.PerGPU
		p.MemoryPerGPUResourceGB = slice.MemoryGB
	}
	if spec.TimeSlicing > 1 {
		// Time-sliced pods share the GPU's memory: count each one's share.
		p.TimeSlicing = spec.TimeSlicing
		p.GPUResourcesPerNode *= spec.TimeSlicing
		p.MemoryPerGPUResourceGB /= spec.TimeSlicing
	}
	if p.MIGProfile != "" || p.TimeSlicing > 1 {
		p.DevicePluginConfig = spec.Name
	}
	if spec.Spot && spot != nil {
		p.Tolerations = append(p.Tolerations, *spot)
	}
	return p
}

// GPUResourceName is the device plugin's resource for whole GPUs, and for
// MIG instances under its single strategy.
const GPUResourceName = "nvidia.com/gpu"

// NodeLabels are the labels every node of the pool carries on every target:
// the user's extra labels, then the program's own, which win (validation
// keeps them apart). A target adds its own (bare metal's autoscaler and
// MIG labels).
func NodeLabels(pool Resolved) map[string]string {
	spec, sku := pool.Spec, pool.SKU
	l := make(map[string]string, len(spec.Labels)+7)
	maps.Copy(l, spec.Labels)
	l[LabelPool] = spec.Name
	l[LabelGPUModel] = sku.GPU.Label
	l[LabelGPUCount] = strconv.Itoa(sku.GPUs)
	l[LabelSKU] = sku.Name
	l[LabelGPUPresent] = "true"
	if c := pool.Facts.DevicePluginConfig; c != "" {
		l[LabelDevicePluginConfig] = c
	}
	return l
}

// AvoidGPUNodes is the node affinity of what runs on CPU nodes (vector
// databases, Ollama for development): any node without the GPU label
// (the GPU operator and the device plugin chart set
// nvidia.com/gpu.present=true on GPU nodes).
func AvoidGPUNodes() map[string]any {
	return map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
			map[string]any{"key": LabelGPUPresent, "operator": "NotIn", "values": []any{"true"}},
		}}},
	}}
}

// SelectedPool is the GPU pool whose nodes a nodeSelector picks, if any:
// the selector's every label is one of the pool's own.
func SelectedPool(selector map[string]string, pools []Facts) (string, bool) {
	if len(selector) == 0 {
		return "", false
	}
	for _, pool := range pools {
		picks := true
		for k, v := range selector {
			if pool.NodeSelector[k] != v {
				picks = false
				break
			}
		}
		if picks {
			return pool.Name, true
		}
	}
	return "", false
}

// TolerationValues are the pool's tolerations as a pod spec (or a chart's
// values) holds them.
func (p Facts) TolerationValues() []any {
	out := make([]any, len(p.Tolerations))
	for i, t := range p.Tolerations {
		out[i] = map[string]any{"key": t.Key, "operator": t.Operator, "value": t.Value, "effect": t.Effect}
	}
	return out
}
