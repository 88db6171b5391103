// Package stacks is the program: the typed stack config, its validation and
// the one Program function that the CLI and the Automation API both run.
package stacks

import (
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/components/gpupool"
	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/serving"
)

// Namespace is the config namespace, the Pulumi project name.
const Namespace = "gpu-node-pools"

// Secret is a config value that must stay a Pulumi secret. It never prints,
// so a config logged by mistake does not leak it.
type Secret string

func (Secret) String() string   { return "[secret]" }
func (Secret) GoString() string { return "[secret]" }

// Output is the value as a Pulumi secret, the only form it leaves config in.
func (s Secret) Output() pulumi.StringOutput {
	return pulumi.ToSecret(pulumi.String(string(s))).(pulumi.StringOutput)
}

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
	// Storage is where model weights live.
	Storage *StorageConfig `json:"storage,omitempty"`
	// Serving are the model serving settings.
	Serving ServingConfig `json:"serving,omitempty"`
	// Models are served with vLLM on the pools.
	Models []serving.ModelSpec `json:"models,omitempty"`
	// BatchJobs run off-peak on the pools.
	BatchJobs []serving.BatchJobSpec `json:"batchJobs,omitempty"`
	// Policies are the Kyverno policies for GPU pods.
	Policies policy.Spec `json:"policies,omitempty"`
}

// ResolvedPolicies are the policies with their defaults and their scope:
// the platform and serving namespaces this stack uses.
func (c *Config) ResolvedPolicies() policy.Resolved {
	onAKS := c.Target == catalog.AKS
	return c.Policies.Resolve(policy.Scope{
		PlatformNamespace: c.Platform.Defaults(onAKS).Namespace,
		ServingNamespace:  c.Serving.Defaults(onAKS).Namespace,
	})
}

// StorageConfig is the weights store with its credentials (secrets).
type StorageConfig struct {
	serving.StorageSpec
	AccessKey  Secret `json:"accessKey,omitempty"`
	SecretKey  Secret `json:"secretKey,omitempty"`
	AccountKey Secret `json:"accountKey,omitempty"`
}

// ServingConfig are the serving options plus the API key a stack may
// supply (as a secret) instead of a generated one.
type ServingConfig struct {
	serving.Options
	APIKey Secret `json:"apiKey,omitempty"`
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
var configKeys = []string{"target", "aks", "natron", "renderDir", "protect", "pools", "platform", "storage", "serving", "models", "batchJobs", "policies"}

// ChartDirEnv is read when platform.chartDir is not set: a local directory
// of chart archives for offline rendering (tests, these build machines).
const ChartDirEnv = "GPU_NODE_POOLS_CHART_DIR"

// Env is the rclone configuration of the "src" remote the download Jobs
// read weights from, credentials as Pulumi secrets.
func (s *StorageConfig) Env() pulumi.StringMap {
	if s.Kind == serving.AzureBlob {
		env := pulumi.StringMap{
			"RCLONE_CONFIG_SRC_TYPE":    pulumi.String("azureblob"),
			"RCLONE_CONFIG_SRC_ACCOUNT": pulumi.String(s.Account),
		}
		if s.AccountKey != "" {
			env["RCLONE_CONFIG_SRC_KEY"] = s.AccountKey.Output()
		} else {
			env["RCLONE_CONFIG_SRC_ENV_AUTH"] = pulumi.String("true") // workload identity
		}
		return env
	}
	env := pulumi.StringMap{
		"RCLONE_CONFIG_SRC_TYPE":              pulumi.String("s3"),
		"RCLONE_CONFIG_SRC_PROVIDER":          pulumi.String("Other"),
		"RCLONE_CONFIG_SRC_ENDPOINT":          pulumi.String(s.Endpoint),
		"RCLONE_CONFIG_SRC_ACCESS_KEY_ID":     s.AccessKey.Output(),
		"RCLONE_CONFIG_SRC_SECRET_ACCESS_KEY": s.SecretKey.Output(),
	}
	if s.Region != "" {
		env["RCLONE_CONFIG_SRC_REGION"] = pulumi.String(s.Region)
	}
	return env
}
