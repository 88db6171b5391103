package plan_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/components/backup"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// On AKS, a Velero location with a clientId gets the target's workload
// identity, and Velero's chart values carry it: the pod label the Azure
// webhook selects and the client ID on the server's service account
// (velero-plugin-for-microsoft-azure README, workload identity).
func TestVeleroGetsTheTargetsWorkloadIdentity(t *testing.T) {
	t.Parallel()
	const id = "9a4d1c9e-3b6f-4d5a-8f2e-1c7b5e0d4a21"
	c := stacktest.AKS()
	c["backup"] = map[string]any{"enabled": true, "install": true, "location": map[string]any{"provider": "azure", "bucket": "velero",
		"storageAccount": "acmebackups", "resourceGroup": "rg-acme-backup", "clientId": id, "identityName": "id-velero"}}
	c["policies"] = map[string]any{"enabled": false}
	p, err := plan.Load(stacktest.Encode(t, c), "test")
	if err != nil {
		t.Fatal(err)
	}
	values := backup.Release(p.Backup.Spec, p.Charts, p.Backup.Identity).Values
	want := map[string]any{
		"podLabels":      map[string]any{"azure.workload.identity/use": "true"},
		"serviceAccount": map[string]any{"server": map[string]any{"annotations": map[string]any{"azure.workload.identity/client-id": id}}},
	}
	got := map[string]any{"podLabels": helmtest.Get(values, "podLabels"), "serviceAccount": helmtest.Get(values, "serviceAccount")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Velero's identity values (-want +got):\n%s", diff)
	}
}

// On AKS, pgvector's backups into the stack's Blob storage sign in with
// the storage block's backupClientId as the target's workload identity
// (never the weights' clientId, which only reads): the
// CloudNativePG Cluster's pods carry the label the Azure webhook selects,
// its service account the client ID, and barman inherits the identity
// (CloudNativePG's azureCredentials.inheritFromAzureAD, docs: backup on
// object stores, Azure Blob).
func TestPgvectorBackupsGetTheTargetsWorkloadIdentity(t *testing.T) {
	t.Parallel()
	const id = "2f0c8b7a-6e51-4c3d-9a8b-7d6e5f4a3b21"
	c := stacktest.AKS()
	c["storage"] = map[string]any{"kind": "azureBlob", "account": "acmemodels", "clientId": "5b1e0c3d-8a7f-4e2d-9c6b-3a2f1e0d9c8b", "identityName": "id-acme-models",
		"backupClientId": id, "backupIdentityName": "id-acme-backups"}
	c["vectorDBs"] = []any{map[string]any{"name": "rag", "size": "10Gi", "backup": "https://acmemodels.blob.core.windows.net/pg/rag"}}
	c["policies"] = map[string]any{"enabled": false}
	p, err := plan.Load(stacktest.Encode(t, c), "test")
	if err != nil {
		t.Fatal(err)
	}
	if p.VectorDBs == nil || p.VectorDBs.Store == nil {
		t.Fatal("no vector databases, or no backup store, in the plan")
	}
	store := *p.VectorDBs.Store
	store.Destination = p.VectorDBs.Specs[0].Backup // as the component sets it
	cluster := vectordb.Cluster(p.VectorDBs.Specs[0], &store)
	want := map[string]any{
		"labels":       "true",
		"annotation":   id,
		"credentials":  map[string]any{"inheritFromAzureAD": true},
		"noS3Endpoint": nil,
	}
	got := map[string]any{
		"labels":       helmtest.Get(cluster, "spec", "inheritedMetadata", "labels", "azure.workload.identity/use"),
		"annotation":   helmtest.Get(cluster, "spec", "serviceAccountTemplate", "metadata", "annotations", "azure.workload.identity/client-id"),
		"credentials":  helmtest.Get(cluster, "spec", "backup", "barmanObjectStore", "azureCredentials"),
		"noS3Endpoint": helmtest.Get(cluster, "spec", "backup", "barmanObjectStore", "endpointURL"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pgvector Cluster's identity (-want +got):\n%s", diff)
	}
}

// Every pod that signs in with workload identity runs under a service
// account the plan federates, for its own client ID: the weight download
// (its Job's pod) with the weights' read-only identity, pgvector's
// backups (CloudNativePG runs a cluster's pods under a service account
// named after the cluster, cloudnative-pg v1.30.0 docs/src/security.md)
// with the backups' identity, and Velero (its Deployment as the real
// chart renders it). And from the other side: the weights' identity is
// federated with the download's account and no other, so no pod beside a
// database can sign in as what may change the weights' store.
func TestEveryWorkloadIdentityIsFederated(t *testing.T) {
	t.Parallel()
	const storageID, backupsID, veleroID = "2f0c8b7a-6e51-4c3d-9a8b-7d6e5f4a3b21", "7c2d9e1f-0a3b-4c5d-8e6f-1a2b3c4d5e6f", "9a4d1c9e-3b6f-4d5a-8f2e-1c7b5e0d4a21"
	c := stacktest.ServingAKS()
	c["storage"] = map[string]any{"kind": "azureBlob", "account": "acmemodels", "clientId": storageID, "identityName": "id-acme-models",
		"backupClientId": backupsID, "backupIdentityName": "id-acme-backups"}
	c["vectorDBs"] = []any{map[string]any{"name": "rag", "size": "10Gi", "backup": "https://acmemodels.blob.core.windows.net/pg/rag"}}
	c["backup"] = map[string]any{"enabled": true, "install": true, "location": map[string]any{"provider": "azure", "bucket": "velero",
		"storageAccount": "acmebackups", "resourceGroup": "rg-acme-backup", "clientId": veleroID, "identityName": "id-velero"}}
	c["policies"] = map[string]any{"enabled": false}
	p, err := plan.Load(stacktest.Encode(t, c), "test")
	if err != nil {
		t.Fatal(err)
	}
	federated := map[string]string{} // subject -> client ID
	for _, id := range p.Identities {
		federated[id.Subject()] = id.ClientID
	}
	type user struct{ what, namespace, account, clientID string }
	var users []user
	// the weight download: its Job's pod
	e := p.Serving.Engines[0]
	pod := helmtest.Get(serving.DownloadJob(p.ServingOptions.Namespace, e, *p.Serving.Storage, p.Serving.Identity), "spec", "template", "spec").(map[string]any)
	users = append(users, user{"the weight download", p.ServingOptions.Namespace, pod["serviceAccountName"].(string), storageID})
	// pgvector: the cluster's pods run as the cluster's account
	for _, s := range p.VectorDBs.Specs {
		users = append(users, user{"pgvector " + s.Name, s.Namespace, s.Name, backupsID})
	}
	// Velero: the server Deployment of the real chart
	rel := backup.Release(p.Backup.Spec, helm.Source{}, p.Backup.Identity)
	for _, o := range helmtest.RenderRelease(t, filepath.Join(pulumitest.SharedDir(t), "charts"), rel, p.Backup.Spec.Namespace) {
		if o["kind"] == "Deployment" {
			users = append(users, user{"Velero", p.Backup.Spec.Namespace, helmtest.Get(o, "spec", "template", "spec", "serviceAccountName").(string), veleroID})
		}
	}
	if len(users) != 3 {
		t.Fatalf("found %d workload-identity users, want the download, pgvector and Velero", len(users))
	}
	for _, u := range users {
		subject := "system:serviceaccount:" + u.namespace + ":" + u.account
		if got, ok := federated[subject]; !ok || got != u.clientID {
			t.Errorf("%s runs as %s, which is not federated with client %s (federated: %v)", u.what, subject, u.clientID, federated)
		}
	}
	download := "system:serviceaccount:" + p.ServingOptions.Namespace + ":" + serving.DownloadServiceAccount
	for subject, id := range federated {
		if id == storageID && subject != download {
			t.Errorf("the weights' identity is federated with %s too: a pod there could sign in as it", subject)
		}
	}
}

// The weights' credential is never the backups': a stack that gives
// pgvector's backups the weights' keys or identity is refused, and so is
// one that gives them none.
func TestBackupsNeverHoldTheWeightsCredential(t *testing.T) {
	t.Parallel()
	const id = "2f0c8b7a-6e51-4c3d-9a8b-7d6e5f4a3b21"
	s3 := func(backup map[string]any) map[string]any {
		st := map[string]any{"kind": "s3", "endpoint": "https://s3.example", "accessKey": "weights-reader", "secretKey": "weights-reader-secret"}
		for k, v := range backup {
			st[k] = v
		}
		return st
	}
	for _, tc := range []struct {
		name    string
		aks     bool
		storage map[string]any
		backup  string
		want    string
	}{
		{"s3, no keys of their own", false, s3(nil), "s3://acme/rag", "gpu-node-pools:storage.backupAccessKey: required"},
		{"s3, the weights' keys", false, s3(map[string]any{"backupAccessKey": "weights-reader", "backupSecretKey": "x"}), "s3://acme/rag",
			"gpu-node-pools:storage.backupAccessKey: must differ from storage.accessKey"},
		{"blob, no identity of their own", true, map[string]any{"kind": "azureBlob", "account": "acmemodels", "clientId": id, "identityName": "id-models"},
			"https://acmemodels.blob.core.windows.net/pg/rag", "gpu-node-pools:storage.backupClientId: required"},
		{"blob, the weights' identity", true, map[string]any{"kind": "azureBlob", "account": "acmemodels", "clientId": id, "identityName": "id-models",
			"backupClientId": id, "backupIdentityName": "id-models"}, "https://acmemodels.blob.core.windows.net/pg/rag",
			"gpu-node-pools:storage.backupClientId: must differ from storage.clientId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := stacktest.ServingAKS()
			if !tc.aks {
				c = stacktest.ServingNatron()
			}
			c["storage"] = tc.storage
			c["vectorDBs"] = []any{map[string]any{"name": "rag", "size": "10Gi", "backup": tc.backup}}
			c["policies"] = map[string]any{"enabled": false}
			_, err := plan.Load(stacktest.Encode(t, c), "test")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// A missing identityName is one problem even when several service accounts
// need the identity (the weight download and pgvector's backups), and a
// missing one elsewhere (Velero's) is reported in the same run.
func TestMissingIdentityNamesAreEachToldOnce(t *testing.T) {
	t.Parallel()
	c := stacktest.ServingAKS()
	c["storage"] = map[string]any{"kind": "azureBlob", "account": "acmemodels", "clientId": "2f0c8b7a-6e51-4c3d-9a8b-7d6e5f4a3b21",
		"backupClientId": "7c2d9e1f-0a3b-4c5d-8e6f-1a2b3c4d5e6f"}
	c["vectorDBs"] = []any{map[string]any{"name": "rag", "size": "10Gi", "backup": "https://acmemodels.blob.core.windows.net/pg/rag"}}
	c["backup"] = map[string]any{"enabled": true, "install": true, "location": map[string]any{"provider": "azure", "bucket": "velero",
		"storageAccount": "acmebackups", "resourceGroup": "rg-acme-backup", "clientId": "9a4d1c9e-3b6f-4d5a-8f2e-1c7b5e0d4a21"}}
	c["policies"] = map[string]any{"enabled": false}
	_, err := plan.Load(stacktest.Encode(t, c), "test")
	if err == nil {
		t.Fatal("loads without the identities' names")
	}
	for key, want := range map[string]int{"gpu-node-pools:storage.identityName:": 1, "gpu-node-pools:storage.backupIdentityName:": 1, "gpu-node-pools:backup.location.identityName:": 1} {
		if n := strings.Count(err.Error(), key); n != want {
			t.Errorf("%s reported %d times, want %d:\n%v", key, n, want, err)
		}
	}
}
