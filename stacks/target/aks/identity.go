package aks

import (
	"cmp"
	"fmt"
	"strings"

	containerservice "github.com/pulumi/pulumi-azure-native-sdk/containerservice/v2"
	managedidentity "github.com/pulumi/pulumi-azure-native-sdk/managedidentity/v2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/stacks/target"
)

var _ target.Federator = Target{}

// AzureNativeVersion is the azure-native provider every Azure resource of a
// stack runs on (the containerservice SDK's). The managedidentity SDK is
// served here one release behind; its resources are pinned to this one so
// that one plugin serves the whole stack.
const AzureNativeVersion = "2.82.0"

// TokenAudience is the audience Entra ID accepts federated tokens for.
const TokenAudience = "api://AzureADTokenExchange"

// Federate trusts the cluster's service-account tokens for each managed
// identity: a federated identity credential on the identity, for the
// cluster's OIDC issuer and the service account's subject. It reads the
// cluster once, first, and fails before registering anything when the
// issuer or workload identity is off (naming the first identity's key:
// every identity needs the same).
func (Target) Federate(ctx *pulumi.Context, c target.Cluster, ids []target.Identity) ([]pulumi.Resource, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	cluster, ok := c.(*Cluster)
	if !ok {
		return nil, fmt.Errorf("aks federation: the cluster block is %T, want *aks.Cluster", c)
	}
	mc, err := containerservice.LookupManagedCluster(ctx, &containerservice.LookupManagedClusterArgs{
		ResourceGroupName: cluster.ResourceGroup, ResourceName: cluster.ClusterName,
	})
	if err != nil {
		return nil, fmt.Errorf("aks cluster %s/%s: %w", cluster.ResourceGroup, cluster.ClusterName, err)
	}
	issuer, err := Issuer(cluster, mc, ids[0])
	if err != nil {
		return nil, err
	}
	var out []pulumi.Resource
	last := map[string]pulumi.Resource{} // per managed identity
	for _, id := range ids {
		name := id.Resource + "-federation"
		args := FederationArgs(cluster, id, issuer)
		opts := []pulumi.ResourceOption{pulumi.Version(AzureNativeVersion)}
		key := identityKey(cluster, id)
		if prev, ok := last[key]; ok {
			// Entra ID refuses concurrent credential writes on one
			// identity (409 ConcurrentFederatedIdentityCredentialsWrites
			// ForSingleManagedIdentity, pulumi-azure-native#4343): one
			// after the other, creates and deletes alike
			opts = append(opts, pulumi.DependsOn([]pulumi.Resource{prev}))
		}
		fic, err := managedidentity.NewFederatedIdentityCredential(ctx, name, args, opts...)
		if err != nil {
			return nil, fmt.Errorf("federated identity credential %s: %w", name, err)
		}
		last[key] = fic
		out = append(out, fic)
	}
	return out, nil
}

// identityKey names the managed identity a credential is written on.
func identityKey(c *Cluster, id target.Identity) string {
	return cmp.Or(id.ResourceGroup, c.ResourceGroup) + "/" + id.Name
}

// Issuer is the cluster's OIDC issuer URL, or what to enable: Entra ID
// only trusts tokens of an issuer it can reach, and only the workload
// identity webhook puts the federated token into the download's pod.
func Issuer(c *Cluster, mc *containerservice.LookupManagedClusterResult, id target.Identity) (string, error) {
	var missing []string
	issuer := ""
	if p := mc.OidcIssuerProfile; p == nil || p.Enabled == nil || !*p.Enabled || p.IssuerURL == "" {
		missing = append(missing, "--enable-oidc-issuer")
	} else {
		issuer = p.IssuerURL
	}
	if s := mc.SecurityProfile; s == nil || s.WorkloadIdentity == nil || s.WorkloadIdentity.Enabled == nil || !*s.WorkloadIdentity.Enabled {
		missing = append(missing, "--enable-workload-identity")
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("%s: %s signs in with workload identity, which AKS cluster %s does not offer: run az aks update -g %s -n %s %s, or %s",
			id.Key, id.Who, c.ClusterName, c.ResourceGroup, c.ClusterName, strings.Join(missing, " "), id.Instead)
	}
	return issuer, nil
}

// FederationArgs are the credential's inputs: the identity's resource
// group defaults to the cluster's.
func FederationArgs(c *Cluster, id target.Identity, issuer string) *managedidentity.FederatedIdentityCredentialArgs {
	return &managedidentity.FederatedIdentityCredentialArgs{
		ResourceGroupName:                       pulumi.String(cmp.Or(id.ResourceGroup, c.ResourceGroup)),
		ResourceName:                            pulumi.String(id.Name),
		FederatedIdentityCredentialResourceName: pulumi.String(c.ClusterName + "-" + id.Namespace + "-" + id.ServiceAccount),
		Issuer:                                  pulumi.String(issuer),
		Subject:                                 pulumi.String(id.Subject()),
		Audiences:                               pulumi.StringArray{pulumi.String(TokenAudience)},
	}
}

// WorkloadIdentity: the Azure workload identity webhook mutates pods
// labelled azure.workload.identity/use=true whose service account names
// the identity's client ID (azure-workload-identity docs, "Service
// Account Labels and Annotations").
func (Target) WorkloadIdentity(clientID string) kube.WorkloadIdentity {
	return kube.WorkloadIdentity{
		PodLabels:                 map[string]string{"azure.workload.identity/use": "true"},
		ServiceAccountAnnotations: map[string]string{"azure.workload.identity/client-id": clientID},
	}
}
