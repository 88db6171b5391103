package gpupool

import (
	"maps"
	"strconv"

	"github.com/natron/gpu-node-pools/components/catalog"
)

// Toleration is a pod toleration, in the shape of core/v1 Toleration.
type Toleration struct {
	Key      string `json:"key"`
	Operator string `json:"operator"`
	Value    string `json:"value"`
	Effect   string `json:"effect"`
}

// Pool is what the platform layer, model serving and policies need to know
// about a pool. It is plain data: everything here is known at config time.
type Pool struct {
	Name     string         `json:"name"`
	Target   catalog.Target `json:"target"`
	SKU      string         `json:"sku"`
	GPUModel string         `json:"gpuModel"`
	// GPUsPerNode counts physical GPUs.
	GPUsPerNode int `json:"gpusPerNode"`
	// GPUMemoryGB is the memory of one physical GPU.
	GPUMemoryGB int `json:"gpuMemoryGB"`
	// MIGProfile is empty when the GPUs are not partitioned.
	MIGProfile catalog.MIGProfile `json:"migProfile,omitempty"`
	// MIGInstance is NVIDIA's name of one partition, e.g. "3g.40gb".
	MIGInstance string `json:"migInstance,omitempty"`
	// GPUResourcesPerNode is how many nvidia.com/gpu a node advertises with
	// the single MIG strategy (physical GPUs times instances per GPU).
	GPUResourcesPerNode int `json:"gpuResourcesPerNode"`
	// MemoryPerGPUResourceGB is the memory behind one nvidia.com/gpu.
	MemoryPerGPUResourceGB int `json:"memoryPerGpuResourceGB"`
	// TimeSlicing is how many pods share one GPU (0: not shared).
	TimeSlicing int  `json:"timeSlicing,omitempty"`
	MinNodes    int  `json:"minNodes"`
	MaxNodes    int  `json:"maxNodes"`
	Spot        bool `json:"spot"`
	// NodeSelector lands a pod on this pool and no other.
	NodeSelector map[string]string `json:"nodeSelector"`
	// Tolerations are what a pod needs to run here.
	Tolerations []Toleration `json:"tolerations"`
}

// GPUToleration tolerates the taint every GPU node carries.
var GPUToleration = Toleration{Key: GPUTaintKey, Operator: "Equal", Value: GPUTaintValue, Effect: GPUTaintEffect}

// SpotToleration tolerates the taint AKS puts on spot nodes.
var SpotToleration = Toleration{Key: SpotTaintKey, Operator: "Equal", Value: SpotTaintValue, Effect: "NoSchedule"}

// NewFacts derives a pool's facts from its validated spec and SKU.
func NewFacts(spec Spec, sku catalog.SKU) Pool {
	p := Pool{
		Name:                   spec.Name,
		Target:                 sku.Target,
		SKU:                    sku.Name,
		GPUModel:               sku.GPU.Model,
		GPUsPerNode:            sku.GPUs,
		GPUMemoryGB:            sku.GPU.MemoryGB,
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
		p.GPUResourcesPerNode = sku.GPUs * slice.PerGPU
		p.MemoryPerGPUResourceGB = slice.MemoryGB
	}
	if spec.TimeSlicing > 1 {
		// Time-sliced pods share the GPU's memory: count each one's share.
		p.TimeSlicing = spec.TimeSlicing
		p.GPUResourcesPerNode *= spec.TimeSlicing
		p.MemoryPerGPUResourceGB /= spec.TimeSlicing
	}
	if spec.Spot {
		p.Tolerations = append(p.Tolerations, SpotToleration)
	}
	return p
}

// NodeLabels are the labels every node of the pool carries on every target:
// the user's extra labels, then the program's own, which win (validation
// keeps them apart). A target adds its own (bare metal's autoscaler and
// MIG labels).
func NodeLabels(spec Spec, sku catalog.SKU) map[string]string {
	l := make(map[string]string, len(spec.Labels)+7)
	maps.Copy(l, spec.Labels)
	l[LabelPool] = spec.Name
	l[LabelGPUModel] = sku.GPU.Label
	l[LabelGPUCount] = strconv.Itoa(sku.GPUs)
	l[LabelSKU] = sku.Name
	l[LabelGPUPresent] = "true"
	if spec.TimeSlicing > 1 {
		l[LabelDevicePluginConfig] = spec.Name
	}
	return l
}
