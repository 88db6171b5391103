package nodesim

import (
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/stacks/target/registry"
)

// GFDLabels are the labels GPU feature discovery (k8s-device-plugin
// v0.20.0, internal/lm/resource.go: baseLabeler, newArchitectureLabels,
// getArchFamily, sanitise) gives a node of the pool, on the resource the
// pool advertises: product (with -MIG-<profile> under the single MIG
// strategy, -SHARED when time-sliced), count, replicas, sharing strategy,
// memory in MiB, and the architecture.
func GFDLabels(p gpupool.Facts) map[string]string {
	res := p.GPUResource
	product := sanitise(p.GPUModel)
	count, memMiB := p.GPUsPerNode, p.GPUMemoryGB*1024
	if p.MIGInstance != "" {
		product += "-MIG-" + p.MIGInstance
		count = p.GPUResourcesPerNode
		memMiB = 0 // MIG devices carry attributes instead (newMigAttributeLabels)
	}
	replicas, strategy := 1, "none"
	if p.TimeSlicing > 1 {
		replicas, strategy = p.TimeSlicing, "time-slicing"
		product += "-SHARED"
	}
	l := map[string]string{
		res + ".product":          product,
		res + ".count":            fmt.Sprint(count),
		res + ".replicas":         fmt.Sprint(replicas),
		res + ".sharing-strategy": strategy,
		res + ".family":           family(p.ComputeCapability),
		res + ".compute.major":    fmt.Sprint(p.ComputeCapability / 10),
		res + ".compute.minor":    fmt.Sprint(p.ComputeCapability % 10),
	}
	if memMiB > 0 {
		l[res+".memory"] = fmt.Sprint(memMiB)
	}
	return l
}

func family(cc int) string {
	switch major, minor := cc/10, cc%10; {
	case major == 7 && minor < 5:
		return "volta"
	case major == 7:
		return "turing"
	case major == 8 && minor < 9:
		return "ampere"
	case major == 8:
		return "ada-lovelace"
	case major == 9:
		return "hopper"
	}
	return "undefined"
}

var unsafeChars = regexp.MustCompile("[^A-Za-z0-9-_. ]")

func sanitise(s string) string {
	return strings.Join(strings.Fields(unsafeChars.ReplaceAllString(s, "")), "-")
}

// GPUNode is node i of a pool as the cluster has it once the GPU stack ran:
// the labels the pool's nodes register with, NFD's PCI labels, the GPU
// operator's (bare metal) and GPU feature discovery's, the pool's taints,
// and the SKU's capacity with the GPU resources the device plugin, as
// configured, advertises there.
func GPUNode(r gpupool.Resolved, i int, d DevicePlugin) map[string]any {
	p := r.Facts
	name := GPUNodeName(p.Name, i)
	labels := gpupool.NodeLabels(r)
	if t, ok := registry.Lookup(string(p.Target)); ok && t.Defaults().GPUStack == platform.GPUOperator { // NFD and the operator run with the GPU operator
		maps.Copy(labels, NFDPCILabels(NFDDefaultConfig(), HostDevices(r.SKU)))
		labels = OperatorLabels(labels)
	}
	maps.Copy(labels, GFDLabels(p))
	var taints []any
	for _, t := range p.Tolerations {
		taints = append(taints, map[string]any{"key": t.Key, "value": t.Value, "effect": t.Effect})
	}
	capacity := map[string]any{"cpu": fmt.Sprint(r.SKU.VCPUs), "memory": fmt.Sprintf("%dGi", r.SKU.MemoryGiB), "pods": "110"}
	slice, _ := r.SKU.GPU.Slice(r.Spec.MIGProfile)
	for res, n := range d.Resources(r.SKU, slice, labels) {
		capacity[res] = fmt.Sprint(n)
	}
	return node(name, labels, taints, capacity)
}

// GPUNodeName is the name of node i of a pool.
func GPUNodeName(pool string, i int) string { return fmt.Sprintf("%s-%d", pool, i) }

// CPUNode is a node of the customer's own platform: no GPU, no taint.
func CPUNode(name string, cpu, memoryGi int) map[string]any {
	return node(name, map[string]string{"node-role.example/platform": "true"}, nil,
		map[string]any{"cpu": fmt.Sprint(cpu), "memory": fmt.Sprintf("%dGi", memoryGi), "pods": "110"})
}

func node(name string, labels map[string]string, taints []any, capacity map[string]any) map[string]any {
	l := map[string]any{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"}
	for k, v := range labels {
		l[k] = v
	}
	spec := map[string]any{}
	if len(taints) > 0 {
		spec["taints"] = taints
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": name, "labels": l, "annotations": map[string]any{"kwok.x-k8s.io/node": "fake"}},
		"spec":     spec,
		"status":   map[string]any{"capacity": capacity, "allocatable": capacity},
	}
}
