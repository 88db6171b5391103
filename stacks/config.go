// Package stacks is the program: the typed stack config, its validation and
// the one Program function that the CLI and the Automation API both run.
package stacks

import (
	"strings"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/components/gpupool"
	"github.com/natron/gpu-node-pools/components/platform"
)

// Namespace is the config namespace, the Pulumi project name.
const Namespace = "gpu-node-pools"

// Secret is a config value that must stay a Pulumi secret. It never prints,
// so a config logged by mistake does not leak it.
type Secret string

func (Secret) String() string   { return "[secret]" }
func (Secret) GoString() string { return "[secret]" }

// Config is the stack config contract (gpu-node-pools:*). JSON names are
// the keys platform engineers write in Pulumi.<stack>.yaml.
type Config struct {
	Target    catalog.Target `json:"target"`
	AKS       *AKSConfig     `json:"aks,omitempty"`
	Natron    *NatronConfig  `json:"natron,omitempty"`
	RenderDir string         `json:"renderDir,omitempty"`
	// Protect is nil for "auto": on when the stack name starts with "prod".
	Protect *bool          `json:"protect,omitempty"`
	Pools   []gpupool.Spec `json:"pools"`
	// Platform is the GPU platform layer on top of the pools.
	Platform platform.Spec `json:"platform,omitempty"`
}

// AKSConfig names the customer's existing AKS cluster.
type AKSConfig = gpupool.AKSCluster

// NatronConfig names the Cluster API cluster on a bare-metal site.
type NatronConfig struct {
	// Site is natron-cloud or flex-stack.
	Site string `json:"site"`
	// ClusterName is the Cluster API Cluster in the management cluster.
	ClusterName string `json:"clusterName"`
	// Namespace is the Cluster's namespace in the management cluster.
	Namespace string `json:"namespace"`
	// KubernetesVersion is the workload cluster's version, e.g. v1.33.4.
	KubernetesVersion string `json:"kubernetesVersion"`
	// Image is the node OS image Metal3 writes to hosts.
	Image gpupool.MachineImage `json:"image"`
	// Kubeconfig reaches the workload cluster (not needed with renderDir).
	Kubeconfig Secret `json:"kubeconfig,omitempty"`
	// ManagementKubeconfig reaches the management cluster (not needed with
	// renderDir).
	ManagementKubeconfig Secret `json:"managementKubeconfig,omitempty"`
}

// Cluster is the part of the natron block the pool components need.
func (n *NatronConfig) Cluster() gpupool.BareMetalCluster {
	return gpupool.BareMetalCluster{
		Site:              n.Site,
		ClusterName:       n.ClusterName,
		Namespace:         n.Namespace,
		KubernetesVersion: n.KubernetesVersion,
		Image:             n.Image,
	}
}

// Sites are the provider's bare-metal clouds.
var Sites = []string{"natron-cloud", "flex-stack"}

// ProtectFor resolves protect for a stack: explicit value, else on for
// stacks whose name starts with "prod".
func (c *Config) ProtectFor(stack string) bool {
	if c.Protect != nil {
		return *c.Protect
	}
	return strings.HasPrefix(stack, "prod")
}

// configKeys are the top-level keys, in documentation order.
var configKeys = []string{"target", "aks", "natron", "renderDir", "protect", "pools", "platform"}

// ChartDirEnv is read when platform.chartDir is not set: a local directory
// of chart archives for offline rendering (tests, these build machines).
const ChartDirEnv = "GPU_NODE_POOLS_CHART_DIR"
