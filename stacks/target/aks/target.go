// Package aks is the AKS target: GPU agent pools of NC- and ND-series VMs
// on a customer's existing AKS cluster, in the customer's subscription.
package aks

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/stacks/target"
)

// Target is the AKS target.
type Target struct{}

var _ target.Target = Target{}

// Name is the target's config value and block key.
func (Target) Name() catalog.Target { return Name }

// Catalog is the AKS GPU VM sizes.
func (Target) Catalog() catalog.Section { return Sizes }

// NewCluster is an empty aks block.
func (Target) NewCluster() target.Cluster { return &Cluster{} }

// Defaults: the AKS node image ships the NVIDIA driver, so the device
// plugin and DCGM exporter charts are the GPU stack; Azure Files Premium is
// the RWX class every AKS cluster has. Every AKS network policy engine
// (Azure, Calico, Cilium) enforces NetworkPolicy, while FQDN rules need
// Cilium with Advanced Container Networking Services: egress is by CIDR.
func (Target) Defaults() target.Defaults {
	return target.Defaults{GPUStack: platform.DevicePlugin, StorageClass: "azurefile-csi-premium",
		Plugins: []target.Plugin{{Name: "azure-native", Version: AzureNativeVersion}}}
}

// ValidatePlatform refuses the GPU operator: it would install a second
// driver over the node image's.
func (Target) ValidatePlatform(p *field.Path, s platform.Spec) field.ErrorList {
	if s.GPUStack == platform.GPUOperator {
		return field.ErrorList{fielderr.Forbidden(p.Child("gpuStack"), string(s.GPUStack), "AKS node images ship the NVIDIA driver: use device-plugin on target aks")}
	}
	return nil
}

// Limits of an agent pool's OS disk.
const (
	minDiskGB = 30
	maxDiskGB = 2048
)

var zones = []string{"1", "2", "3"}

// Cluster is the aks block. Required when target is aks: the customer's
// existing AKS cluster, whose agent pools the GPU pools become.
type Cluster struct {
	// ResourceGroup is the resource group of the customer's existing AKS
	// cluster.
	ResourceGroup string `json:"resourceGroup"`
	// ClusterName is the customer's existing AKS cluster, which the pools
	// join.
	ClusterName string `json:"clusterName"`
	// Login is how the Kubernetes provider signs in to an Entra
	// ID-integrated cluster (kubelogin): azurecli, workloadidentity or spn.
	// Default: azurecli.
	Login string `json:"login,omitempty"`
}

var (
	resourceGroupRe = regexp.MustCompile(`^[-\w.()]{1,89}[-\w()]$|^[-\w()]$`)
	clusterNameRe   = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9_-]{0,61}[a-zA-Z0-9])?$`)
)

// Validate checks Azure's naming rules for resource groups and clusters.
func (c *Cluster) Validate(p *field.Path, _ bool) field.ErrorList {
	var errs field.ErrorList
	if !resourceGroupRe.MatchString(c.ResourceGroup) {
		errs = append(errs, fielderr.Invalid(p.Child("resourceGroup"), c.ResourceGroup, "must be an Azure resource group name (1-90 letters, digits, '-', '_', '.', '(', ')', not ending in '.')"))
	}
	if !clusterNameRe.MatchString(c.ClusterName) {
		errs = append(errs, fielderr.Invalid(p.Child("clusterName"), c.ClusterName, "must be an AKS cluster name (1-63 letters, digits, '-', '_', starting and ending with a letter or digit)"))
	}
	if c.Login != "" && !slices.Contains(Logins, c.Login) {
		errs = append(errs, fielderr.NotSupported(p.Child("login"), c.Login, Logins))
	}
	return errs
}

// HasSecrets: the block names the cluster; credentials come from Azure.
func (c *Cluster) HasSecrets() bool { return false }

// NewPool registers one agent pool.
func (Target) NewPool(ctx *pulumi.Context, pool gpupool.Resolved, c target.Cluster, _ *target.Providers, protect bool) (pulumi.Resource, error) {
	cluster, ok := c.(*Cluster)
	if !ok {
		return nil, fmt.Errorf("aks pool %s: the cluster block is %T, want *aks.Cluster", pool.Spec.Name, c)
	}
	return NewPool(ctx, pool.Spec.Name, &PoolArgs{Cluster: *cluster, Pool: pool, Protect: protect})
}

// Planning: AKS has spot VMs; a planned stack reads its weights from Azure
// Blob storage.
func (Target) Planning() target.Planning {
	return target.Planning{Spot: true, WeightsStore: "azureBlob"}
}

// ManagementCluster: AKS agent pools are Azure resources, not objects of a
// management cluster.
func (Target) ManagementCluster() bool { return false }

// SpotToleration tolerates the taint AKS puts by itself on every spot node
// (learn.microsoft.com/azure/aks/spot-node-pool).
var SpotToleration = gpupool.Toleration{Key: "kubernetes.azure.com/scalesetpriority", Operator: "Equal", Value: "spot", Effect: "NoSchedule"}

// SpotToleration is what a pod needs on AKS spot nodes.
func (Target) SpotToleration() *gpupool.Toleration { return &SpotToleration }

// LabelDomains: AKS reserves kubernetes.azure.com for its node labels
// (the agent pool API refuses them).
func (Target) LabelDomains() []string { return []string{"kubernetes.azure.com"} }
