package nodesim

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/natron/gpu-node-pools/internal/gpupool"
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

// JoiningGPUNode is node i of a pool as it joins the cluster, before any
// of the GPU stack has run on it: the labels the pool's nodes register
// with (their kubelet's --node-labels) and its taints, and the host's CPU,
// memory and pods, with no GPU capacity and none of NFD's, the GPU
// operator's or GPU feature discovery's labels: those come from the GPU
// stack's stand-ins once their pods run there (package gpustack).
func JoiningGPUNode(r gpupool.Resolved, i int) map[string]any {
	p := r.Facts
	var taints []any
	for _, t := range p.Tolerations {
		taints = append(taints, map[string]any{"key": t.Key, "value": t.Value, "effect": t.Effect})
	}
	capacity := map[string]any{"cpu": fmt.Sprint(r.SKU.VCPUs), "memory": fmt.Sprintf("%dGi", r.SKU.MemoryGiB), "pods": "110"}
	return node(GPUNodeName(p.Name, i), gpupool.NodeLabels(r), taints, capacity)
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
