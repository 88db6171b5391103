package tests

import (
	"strings"
	"testing"

	managedidentity "github.com/pulumi/pulumi-azure-native-sdk/managedidentity/v2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/target"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
)

// Federating the stack's identities reads the cluster once (its issuer and
// workload identity, before anything is registered) and trusts each
// identity for its own service account: one credential per identity, not
// one lookup per identity.
func TestFederationReadsTheClusterOnce(t *testing.T) {
	t.Parallel()
	ids := []target.Identity{
		{Namespace: "models", ServiceAccount: "weights-download", ClientID: "c1", Name: "id-models", Resource: "weights-download"},
		{Namespace: "vector-dbs", ServiceAccount: "rag", ClientID: "c1", Name: "id-models", Resource: "vectordb-rag"},
		{Namespace: "velero", ServiceAccount: "velero-server", ClientID: "c2", Name: "id-velero", Resource: "velero"},
	}
	m, err := pulumitest.Run(func(ctx *pulumi.Context) error {
		_, err := aks.Target{}.Federate(ctx, &aks.Cluster{ResourceGroup: "rg-acme-prod", ClusterName: "aks-acme-prod"}, ids)
		return err
	}, "gpu-node-pools", "test", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	lookups := 0
	for _, c := range m.Calls() {
		if c.Token == "azure-native:containerservice:getManagedCluster" {
			lookups++
		}
	}
	if lookups != 1 {
		t.Errorf("read the cluster %d times for %d identities, want once", lookups, len(ids))
	}
	for _, id := range ids {
		fic, ok := m.ByName(federationType, id.Resource+"-federation")
		if !ok {
			t.Errorf("no credential for %s", id.Subject())
			continue
		}
		if got := str(fic.Inputs, "subject"); got != id.Subject() || str(fic.Inputs, "resourceName") != id.Name {
			t.Errorf("credential %s trusts %s of %s, want %s of %s", id.Resource, got, str(fic.Inputs, "resourceName"), id.Subject(), id.Name)
		}
	}
}

// Entra ID takes one federated credential write at a time per managed
// identity; the stack writes several on one identity (the download, each
// vector database, Velero may share it). They are written one after the
// other, so the first up of such a stack succeeds, and the mocked Azure,
// which answers overlapping writes with 409 as Azure does, refuses the
// same credentials written side by side.
func TestFederatedCredentialsOnOneIdentityAreWrittenInTurn(t *testing.T) {
	t.Parallel()
	var ids []target.Identity
	for _, sa := range []string{"weights-download", "rag", "search", "memory", "velero-server"} {
		ids = append(ids, target.Identity{Namespace: "ns-" + sa, ServiceAccount: sa, ClientID: "c1", Name: "id-shared", Resource: "fic-" + sa})
	}
	ids = append(ids, target.Identity{Namespace: "velero", ServiceAccount: "velero", ClientID: "c2", Name: "id-other", Resource: "fic-other"})
	cluster := &aks.Cluster{ResourceGroup: "rg-acme-prod", ClusterName: "aks-acme-prod"}
	m, err := pulumitest.Run(func(ctx *pulumi.Context) error {
		_, err := aks.Target{}.Federate(ctx, cluster, ids)
		return err
	}, "gpu-node-pools", "test", nil, nil)
	if err != nil {
		t.Fatalf("first up: %v", err)
	}
	for _, id := range ids {
		if _, ok := m.ByName(federationType, id.Resource+"-federation"); !ok {
			t.Errorf("no credential for %s", id.Subject())
		}
	}

	// the precondition: the same credentials, not ordered, collide
	_, err = pulumitest.Run(func(ctx *pulumi.Context) error {
		for _, id := range ids[:3] {
			if _, err := managedidentity.NewFederatedIdentityCredential(ctx, id.Resource, aks.FederationArgs(cluster, id, pulumitest.AKSIssuer)); err != nil {
				return err
			}
		}
		return nil
	}, "gpu-node-pools", "test", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity") {
		t.Errorf("three credentials on one identity written side by side: %v, want Azure's 409", err)
	}
}
