package aks

import (
	"os"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/stacks/target"
	containerservice "github.com/pulumi/pulumi-azure-native-sdk/containerservice/v2"
)

// The pin is the containerservice SDK's version: the agent pools and the
// federated credential then share one azure-native plugin.
func TestAzureNativeVersionIsTheAgentPools(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := "github.com/pulumi/pulumi-azure-native-sdk/containerservice/v2 v" + AzureNativeVersion + "\n"
	if !strings.Contains(string(mod), want) {
		t.Errorf("go.mod does not require %q: AzureNativeVersion must be the agent pools' plugin, so that one plugin serves the stack", strings.TrimSpace(want))
	}
}

func TestIssuer(t *testing.T) {
	t.Parallel()
	on, off := true, false
	c := &Cluster{ResourceGroup: "rg", ClusterName: "aks"}
	wi := func(b *bool) *containerservice.ManagedClusterSecurityProfileResponse {
		return &containerservice.ManagedClusterSecurityProfileResponse{WorkloadIdentity: &containerservice.ManagedClusterSecurityProfileWorkloadIdentityResponse{Enabled: b}}
	}
	for _, tc := range []struct {
		name string
		mc   containerservice.LookupManagedClusterResult
		want string // issuer, or a part of the error
	}{
		{"ready", containerservice.LookupManagedClusterResult{OidcIssuerProfile: &containerservice.ManagedClusterOIDCIssuerProfileResponse{Enabled: &on, IssuerURL: "https://issuer/"}, SecurityProfile: wi(&on)}, "https://issuer/"},
		{"no issuer", containerservice.LookupManagedClusterResult{SecurityProfile: wi(&on)}, "az aks update -g rg -n aks --enable-oidc-issuer,"},
		{"issuer off", containerservice.LookupManagedClusterResult{OidcIssuerProfile: &containerservice.ManagedClusterOIDCIssuerProfileResponse{Enabled: &off}, SecurityProfile: wi(&on)}, "--enable-oidc-issuer,"},
		{"webhook off", containerservice.LookupManagedClusterResult{OidcIssuerProfile: &containerservice.ManagedClusterOIDCIssuerProfileResponse{Enabled: &on, IssuerURL: "https://issuer/"}, SecurityProfile: wi(&off)}, "-n aks --enable-workload-identity,"},
		{"neither", containerservice.LookupManagedClusterResult{}, "--enable-oidc-issuer --enable-workload-identity, or use storage.accountKey"},
	} {
		got, err := Issuer(c, &tc.mc, target.Identity{Key: "gpu-node-pools:storage.clientId", Who: "the weight download", Instead: "use storage.accountKey"})
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
