// Package gpupool is what every target shares about a GPU pool: the pool
// as written and its rules, its facts for the layers above (the GPU
// platform, serving, policies), its node labels and the GPU taint. Each
// target builds its pools from these (stacks/target/aks, .../baremetal).
package gpupool

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/fielderr"
)

// Spec is one pool as written in config (gpu-node-pools:pools[i]). Field names
// are the config contract: keep them stable.
type Spec struct {
	// Name is lowercase letters and digits, starts with a letter, at most 12
	// characters (AKS's agent pool name rule), unique.
	Name string `json:"name"`
	// SKU is an AKS VM size or a bare-metal profile from the catalog (the
	// error lists the known ones).
	SKU string `json:"sku"`
	// MinNodes is the lower autoscaling bound, 0 <= minNodes <= maxNodes: 0
	// scales to zero.
	MinNodes int `json:"minNodes"`
	// MaxNodes is the upper autoscaling bound, 1 to 1000.
	MaxNodes int `json:"maxNodes"`
	// Spot asks for spot capacity, evicted with Delete (AKS only).
	// Default: false.
	Spot bool `json:"spot,omitempty"`
	// MIGProfile splits each GPU with MIG: MIG1g, MIG2g, MIG3g, MIG4g or
	// MIG7g, only on MIG-capable GPUs (A100, H100, H200).
	MIGProfile catalog.MIGProfile `json:"migProfile,omitempty"`
	// Labels are extra node labels. Keys the program or the platform own are
	// refused: gpu.natron.cloud/, nvidia.com/, cluster-api/, *.x-k8s.io/,
	// metal3.io/, kubernetes.azure.com/, *.kubernetes.io/, *.k8s.io/.
	Labels map[string]string `json:"labels,omitempty"`
	// Options are the target's own keys of the pool, under the target's
	// name (pools[i].aks): what only that target reads. The config decodes
	// them into the target's type (Target.NewPoolOptions); nil when the
	// pool sets none.
	Options Options `json:"-"`
	// TimeSlicing is how many pods share each GPU through the device
	// plugin's time-slicing, 2 to 48 (the pool's nodes get their own device
	// plugin config); not with migProfile.
	// Default: 0, no sharing.
	TimeSlicing int `json:"timeSlicing,omitempty"`
}

// Options are a target's own keys of a pool (pools[i].<target>), decoded
// into and validated by the target.
type Options interface {
	// Target is the target the keys belong to: their key in the pool.
	Target() catalog.Target
}

// MarshalJSON writes the pool as the stack file holds it: its options
// under their target's key.
func (s Spec) MarshalJSON() ([]byte, error) {
	type plain Spec // without this method
	b, err := json.Marshal(plain(s))
	if err != nil || s.Options == nil || reflect.ValueOf(s.Options).IsNil() {
		return b, err
	}
	opts, err := json.Marshal(s.Options)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m[string(s.Options.Target())] = opts
	return json.Marshal(m)
}

// Limits of a pool, on every target.
const (
	// MaxNodesLimit is AKS's per-pool maximum; bare metal uses the same.
	MaxNodesLimit = 1000
	// MaxTimeSlicing bounds GPU sharing: beyond this, context switching
	// eats the GPU and per-pod memory is too small to be useful.
	MaxTimeSlicing = 48
)

// nameRe is AKS's agent pool name rule, kept on every target so that a
// pool can move between them.
var nameRe = regexp.MustCompile(`^[a-z][a-z0-9]{0,11}$`)

// Validate checks the rules every target shares; targets check their own
// keys, and ValidateSKU what depends on the node shape. labelDomains are
// the label domains the targets' platforms own (Target.LabelDomains), which
// a pool's labels may not use on any target, so that a pool can move
// between them.
func (s Spec) Validate(p *field.Path, labelDomains []string) field.ErrorList {
	var errs field.ErrorList
	if !nameRe.MatchString(s.Name) {
		errs = append(errs, fielderr.Invalid(p.Child("name"), s.Name, "must be lowercase letters and digits, start with a letter, at most 12 characters"))
	}
	if s.MinNodes < 0 {
		errs = append(errs, fielderr.Invalid(p.Child("minNodes"), s.MinNodes, "must be >= 0 (0 scales to zero)"))
	}
	switch maxNodes := p.Child("maxNodes"); {
	case s.MaxNodes < 1:
		errs = append(errs, fielderr.Invalid(maxNodes, s.MaxNodes, "must be between 1 and %d", MaxNodesLimit))
	case s.MaxNodes > MaxNodesLimit:
		errs = append(errs, fielderr.Invalid(maxNodes, s.MaxNodes, "must be <= %d", MaxNodesLimit))
	case s.MaxNodes < s.MinNodes:
		errs = append(errs, fielderr.Invalid(maxNodes, s.MaxNodes, "must be >= minNodes (%d)", s.MinNodes))
	}
	if s.MIGProfile != "" && !catalog.ValidMIG(s.MIGProfile) {
		errs = append(errs, fielderr.NotSupported(p.Child("migProfile"), string(s.MIGProfile), catalog.MIGProfiles))
	}
	reserved := append(slices.Clone(ownLabelDomains), labelDomains...)
	errs = append(errs, fielderr.Labels(p.Child("labels"), s.Labels, func(k string) bool { return ReservedLabel(k, labelDomains) }, reserved)...)
	switch ts := p.Child("timeSlicing"); {
	case s.TimeSlicing == 0:
	case s.TimeSlicing < 2 || s.TimeSlicing > MaxTimeSlicing:
		errs = append(errs, fielderr.Invalid(ts, s.TimeSlicing, "must be 0 (no sharing) or 2-%d pods per GPU", MaxTimeSlicing))
	case s.MIGProfile != "":
		errs = append(errs, fielderr.Invalid(ts, s.TimeSlicing, "use either migProfile (hard partitions) or timeSlicing (shared GPUs), not both; migProfile is %s", s.MIGProfile))
	}
	return errs
}

// ValidateSKU checks what depends on the pool's node shape.
func (s Spec) ValidateSKU(p *field.Path, sku catalog.SKU) field.ErrorList {
	if s.MIGProfile != "" && catalog.ValidMIG(s.MIGProfile) && !sku.GPU.MIG {
		return field.ErrorList{fielderr.Invalid(p.Child("migProfile"), string(s.MIGProfile),
			"%s has %s GPUs, which do not support MIG; remove migProfile or pick an A100, H100 or H200 size", sku.Name, sku.GPU.Model)}
	}
	return nil
}

// Resolved is a validated pool with its node shape and its facts, each
// decided once when the stack's plan is made.
type Resolved struct {
	Spec  Spec
	SKU   catalog.SKU
	Facts Facts
}

// Resolve makes a validated pool's facts from its spec and node shape.
//
// spot is what a pod needs to run on the target's spot nodes (nil: none).
func Resolve(spec Spec, sku catalog.SKU, spot *Toleration) Resolved {
	return Resolved{Spec: spec, SKU: sku, Facts: NewFacts(spec, sku, spot)}
}

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
	// LabelDevicePluginConfig picks the node's entry in the device plugin's
	// config map (MIG and time-slicing pools get their own).
	LabelDevicePluginConfig = "nvidia.com/device-plugin.config"

	// GPUTaintKey etc. make up nvidia.com/gpu=present:NoSchedule.
	GPUTaintKey    = "nvidia.com/gpu"
	GPUTaintValue  = "present"
	GPUTaintEffect = "NoSchedule"
)

// GPUTaint is the taint every GPU node carries, in kubectl notation.
const GPUTaint = GPUTaintKey + "=" + GPUTaintValue + ":" + GPUTaintEffect

// ownLabelDomains are label key prefixes (and their subdomains) users may
// not set on a pool on any target: the program's own, NVIDIA's (feature
// discovery and the GPU operator own them), and Kubernetes', which kubelet
// refuses or reserves. Each target adds its platform's (Target.LabelDomains).
var ownLabelDomains = []string{"gpu.natron.cloud", "nvidia.com", "kubernetes.io", "k8s.io"}

// ReservedLabel reports whether a label key belongs to the program, to
// Kubernetes or to one of the given domains (a target's platform), and so
// may not be set through a pool's labels.
func ReservedLabel(key string, domains []string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range append(slices.Clone(ownLabelDomains), domains...) {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}
