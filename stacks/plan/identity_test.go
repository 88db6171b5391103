package plan_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/components/backup"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
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
		"storageAccount": "acmebackups", "resourceGroup": "rg-acme-backup", "clientId": id}}
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
