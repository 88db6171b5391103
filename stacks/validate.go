package stacks

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/components/gpupool"
	"github.com/natron/gpu-node-pools/components/plain"
)

// Validate checks a typed config (as the Automation API builds it) against
// every rule of the contract and returns all problems in one error.
func Validate(cfg *Config) error {
	return problems(validate(cfg, nil)).err()
}

// Limits of the contract.
const (
	MaxNodesLimit = 1000 // AKS's per-pool maximum; bare metal uses the same
	minAKSDiskGB  = 30
	maxAKSDiskGB  = 2048
)

var (
	poolNameRe   = regexp.MustCompile(`^[a-z][a-z0-9]{0,11}$`)
	dnsLabelRe   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	aksClusterRe = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9_-]{0,61}[a-zA-Z0-9])?$`)
	rgRe         = regexp.MustCompile(`^[-\w.()]{1,89}[-\w()]$|^[-\w()]$`)
	k8sVersionRe = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)
	labelNameRe  = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$`)
	dnsSubRe     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

var (
	checksumTypes = []string{"md5", "sha256", "sha512"}
	diskFormats   = []string{"raw", "qcow2", "vdi", "vmdk", "live-iso"}
	aksZones      = []string{"1", "2", "3"}
)

// validate runs every validator; skip names blocks that failed to decode.
func validate(cfg *Config, skip map[string]bool) []Problem {
	var ps problems
	switch cfg.Target {
	case "":
		ps.add(key("target"), "required; allowed values: aks, natron, got %q", "")
	case catalog.AKS:
		if cfg.AKS == nil {
			ps.add(key("aks"), "required when target is aks (resourceGroup, clusterName), got nothing")
		} else if !skip["aks"] {
			validateAKS(&ps, cfg.AKS)
		}
	case catalog.Natron:
		if cfg.Natron == nil {
			ps.add(key("natron"), "required when target is natron (site, clusterName, namespace, kubernetesVersion, image), got nothing")
		} else if !skip["natron"] {
			validateNatron(&ps, cfg.Natron, cfg.RenderDir != "")
		}
	default:
		ps.add(key("target"), "must be one of aks, natron, got %q", cfg.Target)
	}
	if cfg.Target == catalog.Natron && cfg.AKS != nil {
		ps.add(key("aks"), "only used when target is aks, got target %q", cfg.Target)
	}
	if cfg.Target == catalog.AKS && cfg.Natron != nil {
		ps.add(key("natron"), "only used when target is natron, got target %q", cfg.Target)
	}
	if cfg.RenderDir != "" && strings.TrimSpace(cfg.RenderDir) == "" {
		ps.add(key("renderDir"), "must be a directory path, got %q", cfg.RenderDir)
	}
	if !skip["platform"] {
		validatePlatform(&ps, cfg)
	}
	if !skip["pools"] {
		validateServing(&ps, cfg, skip)
	}
	if !skip["policies"] {
		validatePolicies(&ps, cfg, skip)
	}
	if skip["pools"] {
		return ps
	}
	if len(cfg.Pools) == 0 {
		ps.add(key("pools"), "required: at least one pool, got none")
	}
	seen := map[string]int{}
	for i := range cfg.Pools {
		p := fmt.Sprintf("pools[%d]", i)
		if skip[p] {
			continue
		}
		validatePool(&ps, key(p), cfg.Target, cfg.Pools[i])
		name := cfg.Pools[i].Name
		if j, dup := seen[name]; dup && name != "" {
			ps.add(key(p)+".name", "must be unique, pools[%d] has the same name, got %q", j, name)
		} else {
			seen[name] = i
		}
	}
	return ps
}

func validateAKS(ps *problems, a *AKSConfig) {
	if !rgRe.MatchString(a.ResourceGroup) {
		ps.add(key("aks.resourceGroup"), "must be an Azure resource group name (1-90 letters, digits, '-', '_', '.', '(', ')', not ending in '.'), got %q", a.ResourceGroup)
	}
	if !aksClusterRe.MatchString(a.ClusterName) {
		ps.add(key("aks.clusterName"), "must be an AKS cluster name (1-63 letters, digits, '-', '_', starting and ending with a letter or digit), got %q", a.ClusterName)
	}
}

func validateNatron(ps *problems, n *NatronConfig, rendering bool) {
	if !slices.Contains(Sites, n.Site) {
		ps.add(key("natron.site"), "must be one of %s, got %q", strings.Join(Sites, ", "), n.Site)
	}
	if !dnsLabelRe.MatchString(n.ClusterName) {
		ps.add(key("natron.clusterName"), "must be a DNS label (lowercase letters, digits and '-', at most 63), got %q", n.ClusterName)
	}
	if !dnsLabelRe.MatchString(n.Namespace) {
		ps.add(key("natron.namespace"), "must be a DNS label (lowercase letters, digits and '-', at most 63), got %q", n.Namespace)
	}
	if !k8sVersionRe.MatchString(n.KubernetesVersion) {
		ps.add(key("natron.kubernetesVersion"), "must be a Kubernetes version such as v1.33.4, got %q", n.KubernetesVersion)
	}
	img := n.Image
	if !strings.HasPrefix(img.URL, "http://") && !strings.HasPrefix(img.URL, "https://") {
		ps.add(key("natron.image.url"), "must be an http(s) URL the site's Ironic can fetch, got %q", img.URL)
	}
	if img.Checksum == "" {
		ps.add(key("natron.image.checksum"), "required: the image checksum or a URL to it, got %q", img.Checksum)
	}
	if img.ChecksumType != "" && !slices.Contains(checksumTypes, img.ChecksumType) {
		ps.add(key("natron.image.checksumType"), "must be one of %s, got %q", strings.Join(checksumTypes, ", "), img.ChecksumType)
	}
	if img.DiskFormat != "" && !slices.Contains(diskFormats, img.DiskFormat) {
		ps.add(key("natron.image.diskFormat"), "must be one of %s, got %q", strings.Join(diskFormats, ", "), img.DiskFormat)
	}
	if !rendering {
		if strings.TrimSpace(string(n.Kubeconfig)) == "" {
			ps.add(key("natron.kubeconfig"), "required unless renderDir is set: the workload cluster's kubeconfig as a secret, got nothing")
		}
		if strings.TrimSpace(string(n.ManagementKubeconfig)) == "" {
			ps.add(key("natron.managementKubeconfig"), "required unless renderDir is set: the management cluster's kubeconfig as a secret, got nothing")
		}
	}
}

func validatePool(ps *problems, path string, target catalog.Target, s gpupool.Spec) {
	if !poolNameRe.MatchString(s.Name) {
		ps.add(path+".name", "must be lowercase letters and digits, start with a letter, at most 12 characters, got %q", s.Name)
	}
	sku, known := catalog.Lookup(target, s.SKU)
	if !known && (target == catalog.AKS || target == catalog.Natron) {
		ps.add(path+".sku", "unknown for target %s; known: %s, got %q", target, strings.Join(catalog.Names(target), ", "), s.SKU)
	}
	if s.MinNodes < 0 {
		ps.add(path+".minNodes", "must be >= 0 (0 scales to zero), got %d", s.MinNodes)
	}
	switch {
	case s.MaxNodes < 1:
		ps.add(path+".maxNodes", "must be between 1 and %d, got %d", MaxNodesLimit, s.MaxNodes)
	case s.MaxNodes > MaxNodesLimit:
		ps.add(path+".maxNodes", "must be <= %d, got %d", MaxNodesLimit, s.MaxNodes)
	case s.MaxNodes < s.MinNodes:
		ps.add(path+".maxNodes", "must be >= minNodes (%d), got %d", s.MinNodes, s.MaxNodes)
	}
	validatePlacement(ps, path, target, s)
	if s.MIGProfile != "" {
		switch {
		case !catalog.ValidMIG(s.MIGProfile):
			ps.add(path+".migProfile", "must be one of %s, got %q", migNames(), s.MIGProfile)
		case known && !sku.GPU.MIG:
			ps.add(path+".migProfile", "%s has %s GPUs, which do not support MIG; remove migProfile or pick an A100, H100 or H200 size, got %q", s.SKU, sku.GPU.Model, s.MIGProfile)
		}
	}
	validateLabels(ps, path+".labels", s.Labels)
	switch {
	case s.TimeSlicing == 0:
	case s.TimeSlicing < 2 || s.TimeSlicing > maxTimeSlicing:
		ps.add(path+".timeSlicing", "must be 0 (no sharing) or 2-%d pods per GPU, got %d", maxTimeSlicing, s.TimeSlicing)
	case s.MIGProfile != "":
		ps.add(path+".timeSlicing", "use either migProfile (hard partitions) or timeSlicing (shared GPUs), not both; got timeSlicing %d with %s", s.TimeSlicing, s.MIGProfile)
	}
}

// maxTimeSlicing bounds GPU sharing: beyond this, context switching eats
// the GPU and per-pod memory is too small to be useful.
const maxTimeSlicing = 48

// validatePlacement checks the keys that only make sense on AKS.
func validatePlacement(ps *problems, path string, target catalog.Target, s gpupool.Spec) {
	if target != catalog.AKS {
		if s.Spot {
			ps.add(path+".spot", "only on target aks (bare-metal hosts are not evicted), got true")
		}
		if s.SpotMaxPrice != nil {
			ps.add(path+".spotMaxPrice", "only on target aks, got %v", *s.SpotMaxPrice)
		}
		if len(s.Zones) > 0 {
			ps.add(path+".zones", "only on target aks, got %q", s.Zones)
		}
		if s.OSDiskSizeGB != 0 {
			ps.add(path+".osDiskSizeGB", "only on target aks (a bare-metal host's disk comes with its hardware profile), got %d", s.OSDiskSizeGB)
		}
		return
	}
	if s.SpotMaxPrice != nil {
		switch price := *s.SpotMaxPrice; {
		case !s.Spot:
			ps.add(path+".spotMaxPrice", "only with spot: true, got %v", price)
		case price != -1 && price <= 0:
			ps.add(path+".spotMaxPrice", "must be -1 (up to the on-demand price) or a price > 0 in US dollars per hour, got %v", price)
		}
	}
	seen := map[string]bool{}
	for j, z := range s.Zones {
		if !slices.Contains(aksZones, z) {
			ps.add(fmt.Sprintf("%s.zones[%d]", path, j), "must be one of 1, 2, 3, got %q", z)
		} else if seen[z] {
			ps.add(fmt.Sprintf("%s.zones[%d]", path, j), "must not repeat a zone, got %q", z)
		}
		seen[z] = true
	}
	if s.OSDiskSizeGB != 0 && (s.OSDiskSizeGB < minAKSDiskGB || s.OSDiskSizeGB > maxAKSDiskGB) {
		ps.add(path+".osDiskSizeGB", "must be between %d and %d, got %d", minAKSDiskGB, maxAKSDiskGB, s.OSDiskSizeGB)
	}
}

func validateLabels(ps *problems, path string, labels map[string]string) {
	for _, k := range plain.SortedKeys(labels) {
		v := labels[k]
		p := path + "." + k
		if !validLabelKey(k) {
			ps.add(p, "must be a label key: an optional DNS-subdomain prefix and '/', then 1-63 letters, digits, '-', '_', '.', starting and ending with a letter or digit, got %q", k)
			continue
		}
		if gpupool.ReservedLabel(k) {
			ps.add(p, "is set by the program or the platform; keys under %s are reserved, got %q", strings.Join(gpupool.ReservedLabelDomains(), ", "), k)
		}
		if v != "" && !labelNameRe.MatchString(v) {
			ps.add(p, "value must be empty or 1-63 letters, digits, '-', '_', '.', starting and ending with a letter or digit, got %q", v)
		}
	}
}

func validLabelKey(k string) bool {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	} else if prefix == "" || len(prefix) > 253 || !dnsSubRe.MatchString(prefix) {
		return false
	}
	return labelNameRe.MatchString(name)
}

func migNames() string {
	names := make([]string, len(catalog.MIGProfiles))
	for i, p := range catalog.MIGProfiles {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}
