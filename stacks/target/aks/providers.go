package aks

import (
	"encoding/base64"
	"fmt"

	containerservice "github.com/pulumi/pulumi-azure-native-sdk/containerservice/v2"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/stacks/target"
)

// Providers reaches the AKS cluster with the user kubeconfig Azure gives
// out, or renders to renderDir/workload.
func (Target) Providers(ctx *pulumi.Context, c target.Cluster, renderDir string) (*target.Providers, error) {
	if renderDir != "" {
		w, err := target.RenderProvider(ctx, target.WorkloadDir, renderDir)
		return &target.Providers{Workload: w}, err
	}
	cluster, ok := c.(*Cluster)
	if !ok {
		return nil, fmt.Errorf("aks providers: the cluster block is %T, want *aks.Cluster", c)
	}
	w, err := kubernetes.NewProvider(ctx, target.WorkloadDir, &kubernetes.ProviderArgs{Kubeconfig: kubeconfig(ctx, cluster)})
	if err != nil {
		return nil, fmt.Errorf("kubernetes provider %s: %w", target.WorkloadDir, err)
	}
	return &target.Providers{Workload: w}, nil
}

// kubeconfig reads the cluster's user kubeconfig from Azure, signing in
// with the cluster's login, as a secret.
func kubeconfig(ctx *pulumi.Context, c *Cluster) pulumi.StringOutput {
	creds := containerservice.ListManagedClusterUserCredentialsOutput(ctx, containerservice.ListManagedClusterUserCredentialsOutputArgs{
		ResourceGroupName: pulumi.String(c.ResourceGroup),
		ResourceName:      pulumi.String(c.ClusterName),
	})
	kc := creds.Kubeconfigs().Index(pulumi.Int(0)).Value().ApplyT(func(b64 string) (string, error) {
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return "", fmt.Errorf("aks user kubeconfig is not base64: %w", err)
		}
		return ConvertKubeconfig(string(raw), c.LoginMode())
	}).(pulumi.StringOutput)
	return pulumi.ToSecret(kc).(pulumi.StringOutput)
}
