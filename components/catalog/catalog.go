// Package catalog is the one place that knows GPU hardware: every AKS VM size
// and bare-metal hardware profile the program can build a pool from.
//
// To add a size, add one entry to azureSizes or bareMetalProfiles. The Azure
// figures follow Microsoft's published size tables (vCPUs, memory in GiB,
// GPUs and memory per GPU in GB).
package catalog

import (
	"math"
	"sort"
	"strconv"
)

// Target is where a pool's nodes come from.
type Target string

const (
	// AKS pools are agent pools of a customer's existing AKS cluster.
	AKS Target = "aks"
	// Natron pools are bare-metal machines managed through Cluster API.
	Natron Target = "natron"
)

// Targets lists the valid targets in the order they are documented.
var Targets = []Target{AKS, Natron}

// GPU describes one accelerator model.
type GPU struct {
	// Model is the marketing name, e.g. "NVIDIA A100 80GB PCIe".
	Model string
	// Label is a node-label-safe short name, e.g. "a100-80gb".
	Label string
	// MemoryGB is the framebuffer of one GPU.
	MemoryGB int
	// MIG is true where the GPU can be partitioned with Multi-Instance GPU.
	MIG bool
}

var (
	a100PCIe80 = GPU{Model: "NVIDIA A100 80GB PCIe", Label: "a100-80gb", MemoryGB: 80, MIG: true}
	a100SXM40  = GPU{Model: "NVIDIA A100 40GB SXM4", Label: "a100-40gb", MemoryGB: 40, MIG: true}
	a100SXM80  = GPU{Model: "NVIDIA A100 80GB SXM4", Label: "a100-80gb", MemoryGB: 80, MIG: true}
	h100NVL    = GPU{Model: "NVIDIA H100 NVL", Label: "h100-94gb", MemoryGB: 94, MIG: true}
	h100SXM    = GPU{Model: "NVIDIA H100 80GB HBM3", Label: "h100-80gb", MemoryGB: 80, MIG: true}
	h200SXM    = GPU{Model: "NVIDIA H200 141GB HBM3e", Label: "h200-141gb", MemoryGB: 141, MIG: true}
	v100       = GPU{Model: "NVIDIA Tesla V100 16GB", Label: "v100-16gb", MemoryGB: 16}
	t4         = GPU{Model: "NVIDIA Tesla T4", Label: "t4-16gb", MemoryGB: 16}
	a10        = GPU{Model: "NVIDIA A10", Label: "a10-24gb", MemoryGB: 24}
)

// SKU is one node shape: an AKS VM size or a bare-metal hardware profile.
type SKU struct {
	Name      string
	Target    Target
	Family    string
	GPU       GPU
	GPUs      int // GPUs per node
	VCPUs     int
	MemoryGiB int
}

// azureSizes are the AKS GPU VM sizes. NVadsA10 v5 sizes below a whole GPU
// (NV6/NV12/NV18) are left out on purpose: they expose a vGPU partition that
// needs the GRID driver, which the NVIDIA device plugin path here does not use.
var azureSizes = []SKU{
	{Name: "Standard_NC24ads_A100_v4", Family: "NC A100 v4", GPU: a100PCIe80, GPUs: 1, VCPUs: 24, MemoryGiB: 220},
	{Name: "Standard_NC48ads_A100_v4", Family: "NC A100 v4", GPU: a100PCIe80, GPUs: 2, VCPUs: 48, MemoryGiB: 440},
	{Name: "Standard_NC96ads_A100_v4", Family: "NC A100 v4", GPU: a100PCIe80, GPUs: 4, VCPUs: 96, MemoryGiB: 880},
	{Name: "Standard_NC40ads_H100_v5", Family: "NCads H100 v5", GPU: h100NVL, GPUs: 1, VCPUs: 40, MemoryGiB: 320},
	{Name: "Standard_NC80adis_H100_v5", Family: "NCads H100 v5", GPU: h100NVL, GPUs: 2, VCPUs: 80, MemoryGiB: 640},
	{Name: "Standard_ND96asr_v4", Family: "ND A100 v4", GPU: a100SXM40, GPUs: 8, VCPUs: 96, MemoryGiB: 900},
	{Name: "Standard_ND96amsr_A100_v4", Family: "NDm A100 v4", GPU: a100SXM80, GPUs: 8, VCPUs: 96, MemoryGiB: 1900},
	{Name: "Standard_ND96isr_H100_v5", Family: "ND H100 v5", GPU: h100SXM, GPUs: 8, VCPUs: 96, MemoryGiB: 1900},
	{Name: "Standard_ND96isr_H200_v5", Family: "ND H200 v5", GPU: h200SXM, GPUs: 8, VCPUs: 96, MemoryGiB: 1850},
	{Name: "Standard_NC6s_v3", Family: "NCv3", GPU: v100, GPUs: 1, VCPUs: 6, MemoryGiB: 112},
	{Name: "Standard_NC12s_v3", Family: "NCv3", GPU: v100, GPUs: 2, VCPUs: 12, MemoryGiB: 224},
	{Name: "Standard_NC24s_v3", Family: "NCv3", GPU: v100, GPUs: 4, VCPUs: 24, MemoryGiB: 448},
	{Name: "Standard_NC24rs_v3", Family: "NCv3", GPU: v100, GPUs: 4, VCPUs: 24, MemoryGiB: 448},
	{Name: "Standard_NC4as_T4_v3", Family: "NCasT4_v3", GPU: t4, GPUs: 1, VCPUs: 4, MemoryGiB: 28},
	{Name: "Standard_NC8as_T4_v3", Family: "NCasT4_v3", GPU: t4, GPUs: 1, VCPUs: 8, MemoryGiB: 56},
	{Name: "Standard_NC16as_T4_v3", Family: "NCasT4_v3", GPU: t4, GPUs: 1, VCPUs: 16, MemoryGiB: 110},
	{Name: "Standard_NC64as_T4_v3", Family: "NCasT4_v3", GPU: t4, GPUs: 4, VCPUs: 64, MemoryGiB: 440},
	{Name: "Standard_NV36ads_A10_v5", Family: "NVadsA10 v5", GPU: a10, GPUs: 1, VCPUs: 36, MemoryGiB: 440},
	{Name: "Standard_NV36adms_A10_v5", Family: "NVadsA10 v5", GPU: a10, GPUs: 1, VCPUs: 36, MemoryGiB: 880},
	{Name: "Standard_NV72ads_A10_v5", Family: "NVadsA10 v5", GPU: a10, GPUs: 2, VCPUs: 72, MemoryGiB: 880},
}

// bareMetalProfiles are the server shapes racked at Natron Cloud and Flex
// Stack (HGX boards). Hosts carry the profile name as a BareMetalHost label.
var bareMetalProfiles = []SKU{
	{Name: "a100-40gb-x8", Family: "HGX A100", GPU: a100SXM40, GPUs: 8, VCPUs: 256, MemoryGiB: 1024},
	{Name: "a100-80gb-x4", Family: "HGX A100", GPU: a100SXM80, GPUs: 4, VCPUs: 128, MemoryGiB: 1024},
	{Name: "a100-80gb-x8", Family: "HGX A100", GPU: a100SXM80, GPUs: 8, VCPUs: 256, MemoryGiB: 2048},
	{Name: "h100-80gb-x4", Family: "HGX H100", GPU: h100SXM, GPUs: 4, VCPUs: 112, MemoryGiB: 1024},
	{Name: "h100-80gb-x8", Family: "HGX H100", GPU: h100SXM, GPUs: 8, VCPUs: 224, MemoryGiB: 2048},
}

var byTarget = func() map[Target]map[string]SKU {
	m := map[Target]map[string]SKU{AKS: {}, Natron: {}}
	for _, s := range azureSizes {
		s.Target = AKS
		m[AKS][s.Name] = s
	}
	for _, s := range bareMetalProfiles {
		s.Target = Natron
		m[Natron][s.Name] = s
	}
	return m
}()

// Lookup finds a SKU by its exact name for a target.
func Lookup(t Target, name string) (SKU, bool) {
	s, ok := byTarget[t][name]
	return s, ok
}

// Names lists the SKU names of a target, sorted, for error messages.
func Names(t Target) []string {
	out := make([]string, 0, len(byTarget[t]))
	for n := range byTarget[t] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// MIGProfile is an AKS GPU instance profile name (MIG1g .. MIG7g).
type MIGProfile string

// MIGProfiles lists the valid profiles in order.
var MIGProfiles = []MIGProfile{"MIG1g", "MIG2g", "MIG3g", "MIG4g", "MIG7g"}

// migShape is compute slices, memory eighths and instances per GPU of a
// profile. Memory comes in eighths on every MIG GPU: 3g and 4g both get half.
var migShape = map[MIGProfile]struct{ slices, eighths, perGPU int }{
	"MIG1g": {1, 1, 7},
	"MIG2g": {2, 2, 3},
	"MIG3g": {3, 4, 2},
	"MIG4g": {4, 4, 1},
	"MIG7g": {7, 8, 1},
}

// ValidMIG reports whether p is a known profile.
func ValidMIG(p MIGProfile) bool { _, ok := migShape[p]; return ok }

// MIGSlice is what one MIG instance of a profile gives on a GPU.
type MIGSlice struct {
	// Name is NVIDIA's profile name, e.g. "3g.40gb".
	Name string
	// MemoryGB is the framebuffer of one instance.
	MemoryGB int
	// PerGPU is how many instances one GPU is split into.
	PerGPU int
}

// Slice returns the MIG instance shape of profile p on GPU g.
func (g GPU) Slice(p MIGProfile) (MIGSlice, bool) {
	s, ok := migShape[p]
	if !ok || !g.MIG {
		return MIGSlice{}, false
	}
	mem := int(math.Round(float64(g.MemoryGB*s.eighths) / 8))
	return MIGSlice{Name: strconv.Itoa(s.slices) + "g." + strconv.Itoa(mem) + "gb", MemoryGB: mem, PerGPU: s.perGPU}, true
}
