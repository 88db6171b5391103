// Package target is the plug-in interface of the places GPU nodes come
// from. Each target (AKS, bare metal through Cluster API) owns its catalog
// section, its config block and pool rules, its defaults, its provider
// wiring and its pool component; the registry maps the target config value
// to one. Adding a target adds a package beside aks and natron and one
// line in registry (CONTRIBUTING lists its files).
package target

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/pricing"
	"github.com/natron/gpu-node-pools/internal/secret"
)

// Target is where a stack's GPU nodes come from.
type Target interface {
	// Name is the value of the target config key; the target's own config
	// block has the same key.
	Name() catalog.Target
	// Catalog is the target's section of the SKU catalog.
	Catalog() catalog.Section
	// Prices are the prices on record for the catalog's node shapes; nil
	// when the provider sets them in each stack's pricing block.
	Prices() pricing.Table
	// NewCluster is an empty config block to decode the target's block into.
	NewCluster() Cluster
	// NewPoolOptions is an empty pool block of the target's own keys
	// (pools[i].<name>), or nil when its pools have none.
	NewPoolOptions() gpupool.Options
	// ValidatePool checks the pool keys only this target reads (or refuses).
	ValidatePool(p *field.Path, s gpupool.Spec) field.ErrorList
	// ValidatePlatform checks what the target refuses of the platform block.
	ValidatePlatform(p *field.Path, s platform.Spec) field.ErrorList
	// Defaults are the target's defaults for the layers above the pools.
	Defaults() Defaults
	// Planning is what the planner needs to write a stack for the target.
	Planning() Planning
	// SpotToleration tolerates the taint the target puts on spot nodes
	// (nil: no spot capacity, or no taint).
	SpotToleration() *gpupool.Toleration
	// LabelDomains are the node label domains the target's platform owns
	// (its node agents, its cluster management); no pool may set them, on
	// any target.
	LabelDomains() []string
	// ManagementCluster is whether the pools are objects in a management
	// cluster apart from the workload cluster (Cluster API).
	ManagementCluster() bool
	// Scaffold is the target's part of a new stack file (make stack).
	Scaffold() Scaffold
	// Providers builds the stack's Kubernetes providers, or render
	// providers writing under renderDir when it is set.
	Providers(ctx *pulumi.Context, c Cluster, renderDir string) (*Providers, error)
	// NewPool registers one pool.
	NewPool(ctx *pulumi.Context, pool gpupool.Resolved, c Cluster, providers *Providers, protect bool) (pulumi.Resource, error)
}

// Identity is a Kubernetes service account that signs in to Azure as a
// user-assigned managed identity (workload identity).
type Identity struct {
	Namespace, ServiceAccount string
	// ClientID is the identity's client ID, Name and ResourceGroup where
	// it lives ("": the cluster's resource group).
	ClientID, Name, ResourceGroup string
	// Resource names the trust's resource ("<Resource>-federation"); Key
	// is the config key that asked for it, Who what signs in with it and
	// Instead what to use where the cluster cannot federate.
	Resource, Key, Who, Instead string
}

// Subject is the token subject Kubernetes issues to the service account.
func (id Identity) Subject() string {
	return "system:serviceaccount:" + id.Namespace + ":" + id.ServiceAccount
}

// PriceRefresher is a target whose prices on record come from a public
// price list: gpu-plan prices refreshes them.
type PriceRefresher interface {
	// RefreshPrices reads the list at api ("": the public one) for the
	// catalog's node shapes in regions ("": the default regions).
	RefreshPrices(ctx context.Context, client *http.Client, api string, regions []string, today string) (pricing.Table, error)
	// PricesFromData builds the table from dated, sourced price data kept
	// in the shared assets, at PricesData under their root.
	PricesFromData(r io.Reader) (pricing.Table, error)
	PricesData() string
}

// Federator is a target whose clusters can federate a service account with
// a cloud identity. Federate checks once that the cluster can (it fails,
// naming what to enable, before anything is registered) and registers the
// trust of each identity.
type Federator interface {
	Federate(ctx *pulumi.Context, c Cluster, ids []Identity) ([]pulumi.Resource, error)
	// WorkloadIdentity is what a pod and its service account carry to
	// sign in as the identity with this client ID.
	WorkloadIdentity(clientID string) kube.WorkloadIdentity
}

// Cluster is a target's config block: the cluster its pools join.
type Cluster interface {
	// Validate checks the block; rendering is set when the stack renders
	// to files instead of reaching clusters.
	Validate(p *field.Path, rendering bool) field.ErrorList
	// HasSecrets reports whether the block holds a secret value.
	HasSecrets() bool
}

// Defaults are what a target decides for the layers above its pools.
type Defaults struct {
	// GPUStack is who provides the GPU plumbing on the nodes.
	GPUStack platform.GPUStack
	// StorageClass is the ReadWriteMany class of the weight caches.
	StorageClass string
	// FQDNEgress is whether the clusters' CNI matches egress by host name
	// (Cilium's toFQDNs); without it, egress rules name address ranges.
	FQDNEgress bool
	// Plugins are the resource provider plugins the target's resources
	// need besides the Kubernetes provider (which the toolchain builds).
	Plugins []Plugin
}

// Planning is what the planner (gpu-plan --format yaml) needs to write a
// stack fragment for a target.
type Planning struct {
	// Spot is whether the target has spot capacity a pool may ask for.
	Spot bool
	// WeightsStore is the storage kind (serving.StorageKinds) of the
	// weights store a planned or new stack starts from.
	WeightsStore string
}

// Plugin is a resource provider plugin at a version.
type Plugin struct{ Name, Version string }

// Providers are the Kubernetes providers of a stack, built once.
type Providers struct {
	// Workload is the cluster the GPU workloads run in.
	Workload *kubernetes.Provider
	// Management is the Cluster API management cluster (bare metal only).
	Management *kubernetes.Provider
}

// Render subdirectories of renderDir.
const (
	WorkloadDir   = "workload"
	ManagementDir = "management"
	// GitOpsDir holds the GitOps tool's own objects (Applications or
	// Kustomizations), which sync the other two.
	GitOpsDir = "gitops"
)

// RenderProvider writes objects as YAML under renderDir/<name> (name is
// WorkloadDir or ManagementDir) instead of applying them.
func RenderProvider(ctx *pulumi.Context, name, renderDir string) (*kubernetes.Provider, error) {
	prov, err := kubernetes.NewProvider(ctx, name, &kubernetes.ProviderArgs{
		RenderYamlToDirectory: pulumi.String(filepath.Join(renderDir, name)),
	})
	if err != nil {
		return nil, fmt.Errorf("render provider %s: %w", name, err)
	}
	return prov, nil
}

// KubeconfigProvider reaches the cluster a kubeconfig (a config secret)
// names; the kubeconfig stays a Pulumi secret.
func KubeconfigProvider(ctx *pulumi.Context, name string, kubeconfig secret.Secret) (*kubernetes.Provider, error) {
	prov, err := kubernetes.NewProvider(ctx, name, &kubernetes.ProviderArgs{Kubeconfig: kubeconfig.Output()})
	if err != nil {
		return nil, fmt.Errorf("kubernetes provider %s: %w", name, err)
	}
	return prov, nil
}
