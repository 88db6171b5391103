// Package catalog knows GPU hardware: the GPU models with their data sheet
// speeds and MIG partitions, the links between a node's GPUs, and what a
// section of node shapes is. Each target keeps its own section next to it
// (stacks/target/<name>), built from these models.
//
// To add a size, add one entry to its target's section; a new GPU model
// goes here, with its data sheet speeds in gpus.go.
package catalog

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
)

// Target names where a pool's nodes come from: the value of the target
// config key.
type Target string

// GPU describes one accelerator model.
type GPU struct {
	// Model is the marketing name, e.g. "NVIDIA A100 80GB PCIe".
	Model string
	// Label is a node-label-safe short name, e.g. "a100-80gb".
	Label string
	// MemoryGB is the framebuffer of one GPU, as the data sheet gives it
	// (and MIG profiles are named from).
	MemoryGB int
	// FramebufferMiB is the framebuffer the driver reports (nvidia-smi's
	// memory.total, NVML's total), where it was measured: a "24 GB" A10
	// reports 23028 MiB, 22.5 GiB, not 24 GiB. 0: not measured, taken as
	// MemoryGB GiB (TotalMiB).
	FramebufferMiB int
	// MIG is true where the GPU can be partitioned with Multi-Instance GPU.
	MIG bool
	// MIGGiB is the memory of one MIG instance by its memory eighths (1,
	// 2, 4, 8), as the driver lists it (nvidia-smi mig -lgip, in GiB):
	// less than the profile's name says (1g.12gb on an H100 NVL is 10.75).
	MIGGiB map[int]float64
	// ComputeCapability is CUDA's major*10+minor (NVIDIA's CUDA GPUs list):
	// which kernels, and so which quantization methods, the GPU runs.
	ComputeCapability int
	// Speed is the data sheet's bandwidth and throughput (gpus.go).
	Speed
}

// The GPU models the targets' node shapes carry, with their data sheet
// speeds. FramebufferMiB as nvidia-smi reports it on the GPU, from
// published nvidia-smi output: A100 80GB, A100 40GB, H100 80GB HBM3, A10
// and T4 in modal-labs/modal-client pull 2797 (the A10's also as NVML's
// 24146608128 bytes in mayooot/detect-gpu issue 3, the H100's in
// google/gvisor issue 10413), H100 NVL in NVIDIA/gpu-admin-tools issue 4.
// The V100 16GB and the H200 are not measured yet.
var (
	A100PCIe80 = GPU{Model: "NVIDIA A100 80GB PCIe", Label: "a100-80gb", MemoryGB: 80, FramebufferMiB: 81920, MIG: true, MIGGiB: a100x80MIG, ComputeCapability: 80, Speed: a100PCIe80Speed}
	A100SXM40  = GPU{Model: "NVIDIA A100 40GB SXM4", Label: "a100-40gb", MemoryGB: 40, FramebufferMiB: 40960, MIG: true, MIGGiB: a100x40MIG, ComputeCapability: 80, Speed: a100SXM40Speed}
	A100SXM80  = GPU{Model: "NVIDIA A100 80GB SXM4", Label: "a100-80gb", MemoryGB: 80, FramebufferMiB: 81920, MIG: true, MIGGiB: a100x80MIG, ComputeCapability: 80, Speed: a100SXM80Speed}
	H100NVL    = GPU{Model: "NVIDIA H100 NVL", Label: "h100-94gb", MemoryGB: 94, FramebufferMiB: 95830, MIG: true, MIGGiB: h100NVLMIG, ComputeCapability: 90, Speed: h100NVLSpeed}
	H100SXM    = GPU{Model: "NVIDIA H100 80GB HBM3", Label: "h100-80gb", MemoryGB: 80, FramebufferMiB: 81559, MIG: true, MIGGiB: h100x80MIG, ComputeCapability: 90, Speed: h100SXMSpeed}
	H200SXM    = GPU{Model: "NVIDIA H200 141GB HBM3e", Label: "h200-141gb", MemoryGB: 141, MIG: true, MIGGiB: h200MIG, ComputeCapability: 90, Speed: h200SXMSpeed}
	V100       = GPU{Model: "NVIDIA Tesla V100 16GB", Label: "v100-16gb", MemoryGB: 16, ComputeCapability: 70, Speed: v100PCIeSpeed}
	T4         = GPU{Model: "NVIDIA Tesla T4", Label: "t4-16gb", MemoryGB: 16, FramebufferMiB: 15360, ComputeCapability: 75, Speed: t4Speed}
	A10        = GPU{Model: "NVIDIA A10", Label: "a10-24gb", MemoryGB: 24, FramebufferMiB: 23028, ComputeCapability: 86, Speed: a10Speed}
)

// TotalMiB is the framebuffer the driver reports: FramebufferMiB where
// measured, else MemoryGB taken as GiB.
func (g GPU) TotalMiB() int {
	if g.FramebufferMiB > 0 {
		return g.FramebufferMiB
	}
	return g.MemoryGB * 1024
}

// SKU is one node shape: an AKS VM size or a bare-metal hardware profile.
type SKU struct {
	Name      string
	Target    Target
	Family    string
	GPU       GPU
	GPUs      int // GPUs per node
	VCPUs     int
	MemoryGiB int
	// Link is how the node's GPUs reach each other (tensor parallelism's
	// all-reduces cross it).
	Link Link
}

// Section is one target's node shapes.
type Section struct {
	target Target
	byName map[string]SKU
}

// NewSection indexes a target's node shapes by name.
func NewSection(t Target, skus []SKU) Section {
	s := Section{target: t, byName: make(map[string]SKU, len(skus))}
	for _, sku := range skus {
		sku.Target = t
		s.byName[sku.Name] = sku
	}
	return s
}

// Target is the target the section belongs to.
func (s Section) Target() Target { return s.target }

// Names lists the section's SKU names, sorted, for error messages.
func (s Section) Names() []string { return slices.Sorted(maps.Keys(s.byName)) }

// SKU is the sku key's validator and the one SKU lookup: the node shape
// named, or the problem that lists the known ones.
func (s Section) SKU(p *field.Path, name string) (SKU, *field.Error) {
	if sku, ok := s.byName[name]; ok {
		return sku, nil
	}
	return SKU{}, fielderr.Invalid(p, name, "unknown for target %s; known: %s", s.target, strings.Join(s.Names(), ", "))
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
	// MemoryGB is the memory the name gives.
	MemoryGB int
	// MemoryMiB is the memory the driver gives one instance (GPU.MIGGiB).
	MemoryMiB int
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
	return MIGSlice{
		Name:      strconv.Itoa(s.slices) + "g." + strconv.Itoa(mem) + "gb",
		MemoryGB:  mem,
		MemoryMiB: int(math.Floor(g.migGiB(s.eighths) * 1024)),
		PerGPU:    s.perGPU,
	}, true
}

// migGiB is one instance's memory with eighths of the GPU's memory: as
// listed, else the largest listed smaller instance scaled up (bigger
// instances lose less, so this stays on the safe side), else the name's
// GB taken as GiB.
func (g GPU) migGiB(eighths int) float64 {
	if v, ok := g.MIGGiB[eighths]; ok {
		return v
	}
	for e := eighths - 1; e > 0; e-- {
		if v, ok := g.MIGGiB[e]; ok {
			return v * float64(eighths) / float64(e)
		}
	}
	return math.Round(float64(g.MemoryGB*eighths) / 8)
}

// SKUs lists the section's node shapes, by name.
func (s Section) SKUs() []SKU {
	out := make([]SKU, 0, len(s.byName))
	for _, n := range s.Names() {
		out = append(out, s.byName[n])
	}
	return out
}
