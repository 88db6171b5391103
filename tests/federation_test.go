package tests

import (
	"testing"

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
