package stacks

import (
	"encoding/base64"
	"fmt"
	"path/filepath"

	containerservice "github.com/pulumi/pulumi-azure-native-sdk/containerservice/v2"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/components/catalog"
)

// Providers are the Kubernetes providers of a stack, built once.
type Providers struct {
	// Workload is the cluster the GPU workloads run in.
	Workload *kubernetes.Provider
	// Management is the Cluster API management cluster (natron only).
	Management *kubernetes.Provider
}

// Render subdirectories of renderDir.
const (
	WorkloadDir   = "workload"
	ManagementDir = "management"
)

func newProviders(ctx *pulumi.Context, cfg *Config) (*Providers, error) {
	p := &Providers{}
	var err error
	if cfg.RenderDir != "" {
		p.Workload, err = renderProvider(ctx, "workload", filepath.Join(cfg.RenderDir, WorkloadDir))
		if err != nil {
			return nil, err
		}
		if cfg.Target == catalog.Natron {
			p.Management, err = renderProvider(ctx, "management", filepath.Join(cfg.RenderDir, ManagementDir))
		}
		return p, err
	}
	switch cfg.Target {
	case catalog.AKS:
		p.Workload, err = kubernetes.NewProvider(ctx, "workload", &kubernetes.ProviderArgs{
			Kubeconfig: aksKubeconfig(ctx, cfg.AKS),
		})
	case catalog.Natron:
		p.Workload, err = kubeconfigProvider(ctx, "workload", cfg.Natron.Kubeconfig)
		if err == nil {
			p.Management, err = kubeconfigProvider(ctx, "management", cfg.Natron.ManagementKubeconfig)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes providers: %w", err)
	}
	return p, nil
}

func renderProvider(ctx *pulumi.Context, name, dir string) (*kubernetes.Provider, error) {
	prov, err := kubernetes.NewProvider(ctx, name, &kubernetes.ProviderArgs{
		RenderYamlToDirectory: pulumi.String(dir),
	})
	if err != nil {
		return nil, fmt.Errorf("render provider %s: %w", name, err)
	}
	return prov, nil
}

func kubeconfigProvider(ctx *pulumi.Context, name string, kubeconfig Secret) (*kubernetes.Provider, error) {
	return kubernetes.NewProvider(ctx, name, &kubernetes.ProviderArgs{
		Kubeconfig: kubeconfig.Output(),
	})
}

// aksKubeconfig reads the cluster's user kubeconfig from Azure, as a secret.
func aksKubeconfig(ctx *pulumi.Context, a *AKSConfig) pulumi.StringOutput {
	creds := containerservice.ListManagedClusterUserCredentialsOutput(ctx, containerservice.ListManagedClusterUserCredentialsOutputArgs{
		ResourceGroupName: pulumi.String(a.ResourceGroup),
		ResourceName:      pulumi.String(a.ClusterName),
	})
	kc := creds.Kubeconfigs().Index(pulumi.Int(0)).Value().ApplyT(func(b64 string) (string, error) {
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return "", fmt.Errorf("aks user kubeconfig is not base64: %w", err)
		}
		return string(raw), nil
	}).(pulumi.StringOutput)
	return pulumi.ToSecret(kc).(pulumi.StringOutput)
}
