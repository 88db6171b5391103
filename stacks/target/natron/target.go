// Package baremetal is the bare-metal target (target natron): GPU pools of
// A100/H100 servers on the provider's sites (Natron Cloud, Flex Stack),
// managed through Cluster API and Metal3 in the site's management cluster.
package natron

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/pricing"
	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/stacks/target"
)

// Target is the bare-metal target.
type Target struct{}

var _ target.Target = Target{}

// Name is the target's config value and block key.
func (Target) Name() catalog.Target { return Name }

// Catalog is the hardware profiles racked at the sites.
func (Target) Catalog() catalog.Section { return Profiles }

// Prices is nil: the provider prices its profiles in each stack's pricing
// block.
func (Target) Prices() pricing.Table { return nil }

// NewCluster is an empty natron block.
func (Target) NewCluster() target.Cluster { return &Cluster{} }

// Defaults: bare-metal hosts come without a driver, so the GPU operator
// installs it; the sites' Ceph serves CephFS for ReadWriteMany; the
// sites' clusters run Cilium, so egress names hosts (toFQDNs).
func (Target) Defaults() target.Defaults {
	return target.Defaults{GPUStack: platform.GPUOperator, StorageClass: "cephfs", FQDNEgress: true}
}

// ValidatePlatform: either GPU stack runs on bare metal.
func (Target) ValidatePlatform(*field.Path, platform.Spec) field.ErrorList { return nil }

// ValidatePool refuses spot: bare-metal hosts are not evicted. (Other
// targets' pool blocks are refused when the config is decoded.)
func (Target) ValidatePool(p *field.Path, s gpupool.Spec) field.ErrorList {
	var errs field.ErrorList
	if s.Spot {
		errs = append(errs, fielderr.Forbidden(p.Child("spot"), s.Spot, "must be false on target natron: bare-metal hosts are not evicted (no spot capacity)"))
	}
	return errs
}

// Sites are the provider's bare-metal clouds.
var Sites = []string{"natron-cloud", "flex-stack"}

// Cluster is the natron block. Required when target is natron: the Cluster
// API cluster on a bare-metal site that the pools join, as seen from its
// management cluster.
type Cluster struct {
	// Site is the provider's bare-metal site: natron-cloud or flex-stack.
	Site string `json:"site"`
	// ClusterName is the Cluster API Cluster in the management cluster (a
	// DNS label).
	ClusterName string `json:"clusterName"`
	// Namespace is the Cluster's namespace in the management cluster (a DNS
	// label).
	Namespace string `json:"namespace"`
	// KubernetesVersion is the workload cluster's version, e.g. v1.33.4: the
	// machines' kubelet version.
	KubernetesVersion string `json:"kubernetesVersion"`
	// Image is the node OS image Metal3 writes to hosts.
	Image MachineImage `json:"image"`
	// Kubeconfig reaches the workload cluster, as a secret; not needed with
	// renderDir.
	Kubeconfig secret.Secret `json:"kubeconfig,omitempty"`
	// ManagementKubeconfig reaches the management cluster, as a secret; not
	// needed with renderDir.
	ManagementKubeconfig secret.Secret `json:"managementKubeconfig,omitempty"`
}

// MachineImage is the OS image Metal3 writes to a host's disk.
type MachineImage struct {
	// URL is where the site's Ironic fetches the node OS image Metal3 writes
	// to a host (http or https).
	URL string `json:"url"`
	// Checksum is the image's checksum, or a URL to it.
	Checksum string `json:"checksum"`
	// ChecksumType is md5, sha256 or sha512.
	// Default: Metal3's, from the checksum's length.
	ChecksumType string `json:"checksumType,omitempty"`
	// DiskFormat is raw, qcow2, vdi, vmdk or live-iso.
	// Default: Ironic's detection.
	DiskFormat string `json:"diskFormat,omitempty"`
}

var (
	k8sVersionRe  = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)
	checksumTypes = []string{"md5", "sha256", "sha512"}
	diskFormats   = []string{"raw", "qcow2", "vdi", "vmdk", "live-iso"}
)

// Validate checks the block; the kubeconfigs are needed unless the stack
// renders to files.
func (c *Cluster) Validate(p *field.Path, rendering bool) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, fielderr.OneOf(p.Child("site"), c.Site, Sites)...)
	for _, n := range []struct{ key, value string }{{"clusterName", c.ClusterName}, {"namespace", c.Namespace}} {
		if !fielderr.DNSLabel(n.value) {
			errs = append(errs, fielderr.Invalid(p.Child(n.key), n.value, "must be a DNS label (lowercase letters, digits and '-', at most 63)"))
		}
	}
	if !k8sVersionRe.MatchString(c.KubernetesVersion) {
		errs = append(errs, fielderr.Invalid(p.Child("kubernetesVersion"), c.KubernetesVersion, "must be a Kubernetes version such as v1.33.4"))
	}
	img, ip := c.Image, p.Child("image")
	if !strings.HasPrefix(img.URL, "http://") && !strings.HasPrefix(img.URL, "https://") {
		errs = append(errs, fielderr.Invalid(ip.Child("url"), img.URL, "must be an http(s) URL the site's Ironic can fetch"))
	}
	if img.Checksum == "" {
		errs = append(errs, fielderr.Invalid(ip.Child("checksum"), img.Checksum, "required: the image checksum or a URL to it"))
	}
	if img.ChecksumType != "" {
		errs = append(errs, fielderr.OneOf(ip.Child("checksumType"), img.ChecksumType, checksumTypes)...)
	}
	if img.DiskFormat != "" {
		errs = append(errs, fielderr.OneOf(ip.Child("diskFormat"), img.DiskFormat, diskFormats)...)
	}
	if !rendering {
		if strings.TrimSpace(string(c.Kubeconfig)) == "" {
			errs = append(errs, fielderr.Required(p.Child("kubeconfig"), "required unless renderDir is set: the workload cluster's kubeconfig as a secret"))
		}
		if strings.TrimSpace(string(c.ManagementKubeconfig)) == "" {
			errs = append(errs, fielderr.Required(p.Child("managementKubeconfig"), "required unless renderDir is set: the management cluster's kubeconfig as a secret"))
		}
	}
	return errs
}

// HasSecrets reports whether the block holds a kubeconfig.
func (c *Cluster) HasSecrets() bool { return c.Kubeconfig != "" || c.ManagementKubeconfig != "" }

// Providers reaches the workload and the management cluster through their
// kubeconfigs, or renders to renderDir/workload and renderDir/management.
func (Target) Providers(ctx *pulumi.Context, c target.Cluster, renderDir string) (*target.Providers, error) {
	cluster, ok := c.(*Cluster)
	if !ok {
		return nil, fmt.Errorf("bare-metal providers: the cluster block is %T, want *baremetal.Cluster", c)
	}
	p := &target.Providers{}
	var err error
	if renderDir != "" {
		if p.Workload, err = target.RenderProvider(ctx, target.WorkloadDir, renderDir); err != nil {
			return nil, err
		}
		p.Management, err = target.RenderProvider(ctx, target.ManagementDir, renderDir)
		return p, err
	}
	if p.Workload, err = target.KubeconfigProvider(ctx, target.WorkloadDir, cluster.Kubeconfig); err != nil {
		return nil, err
	}
	p.Management, err = target.KubeconfigProvider(ctx, target.ManagementDir, cluster.ManagementKubeconfig)
	return p, err
}

// NewPool registers one pool's Cluster API objects.
func (Target) NewPool(ctx *pulumi.Context, pool gpupool.Resolved, c target.Cluster, providers *target.Providers, protect bool) (pulumi.Resource, error) {
	cluster, ok := c.(*Cluster)
	if !ok {
		return nil, fmt.Errorf("bare-metal pool %s: the cluster block is %T, want *baremetal.Cluster", pool.Spec.Name, c)
	}
	return NewPool(ctx, pool.Spec.Name, &PoolArgs{Cluster: *cluster, Pool: pool, Protect: protect, Management: providers.Management})
}

// Planning: bare metal has no spot capacity; a planned stack reads its
// weights from the site's S3-compatible store.
func (Target) Planning() target.Planning {
	return target.Planning{WeightsStore: "s3"}
}

// ManagementCluster: the pools are Cluster API objects in the management
// cluster.
func (Target) ManagementCluster() bool { return true }

// SpotToleration is nil: bare metal has no spot capacity.
func (Target) SpotToleration() *gpupool.Toleration { return nil }

// NewPoolOptions is nil: a bare-metal pool has no keys of its own (a
// host's disk and zone come with its hardware).
func (Target) NewPoolOptions() gpupool.Options { return nil }

// LabelDomains: Cluster API and Metal3 label the machines they manage
// (cluster-api/accelerator, cluster.x-k8s.io/*, metal3.io/uuid).
func (Target) LabelDomains() []string { return []string{"cluster-api", "x-k8s.io", "metal3.io"} }
