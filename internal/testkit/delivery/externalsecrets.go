package delivery

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// ExternalSecretsBinEnv names the bin directory of the External Secrets
// Operator and its CRDs (.ci/toolchain/external-secrets.sh).
const ExternalSecretsBinEnv = "GPU_NODE_POOLS_ESO_BIN"

// ExternalSecretsCRDs is the directory of the operator's CRDs, or skips
// (fails in CI) without the operator.
func ExternalSecretsCRDs(t testing.TB) string {
	t.Helper()
	return filepath.Join(externalSecretsBin(t), "crds")
}

func externalSecretsBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(ExternalSecretsBinEnv)
	if bin == "" {
		pulumitest.Missing(t, "a GitOps delivery with ExternalSecrets needs %s: run `make test`, which builds the External Secrets Operator once", ExternalSecretsBinEnv)
	}
	return bin
}

// StartExternalSecrets installs the External Secrets Operator's CRDs
// (unless the cluster has them: its seed's) and runs its controller against srv (no webhook, no leader election), with a
// ClusterSecretStore named store on its built-in fake provider holding the
// given entries (key -> property -> value): the platform's secret store as
// the operator fills it from the render's list of secrets to create.
func StartExternalSecrets(t testing.TB, srv *kubeapi.Server, store string, entries map[string]map[string]string) {
	t.Helper()
	bin := externalSecretsBin(t)
	if _, err := srv.TryKubectl("get", "crd", "externalsecrets.external-secrets.io"); err != nil {
		srv.ApplyCRDs(t, filepath.Join(bin, "crds"))
	}
	srv.StartController(t, "external-secrets", filepath.Join(bin, "external-secrets"),
		"--metrics-addr", "0", "--enable-leader-election=false", "--concurrent", "4",
		"--enable-push-secret-reconciler=false", "--enable-cluster-push-secret-reconciler=false",
		"--enable-cluster-external-secret-reconciler=false", "--store-requeue-interval", "5s")
	var data []any
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := json.Marshal(entries[k])
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, map[string]any{"key": k, "value": string(v)})
	}
	srv.Create(t, map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ClusterSecretStore",
		"metadata": map[string]any{"name": store},
		"spec":     map[string]any{"provider": map[string]any{"fake": map[string]any{"data": data}}}})
}

// StoreEntries are the store entries a tree's ExternalSecrets read, each
// property with a placeholder value: what the operator puts in the store.
func StoreEntries(objs []*unstructured.Unstructured) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, o := range objs {
		if o.GetKind() != "ExternalSecret" {
			continue
		}
		data, _, _ := unstructured.NestedSlice(o.Object, "spec", "data")
		for _, d := range data {
			ref, _ := d.(map[string]any)["remoteRef"].(map[string]any)
			k, _ := ref["key"].(string)
			p, _ := ref["property"].(string)
			if out[k] == nil {
				out[k] = map[string]string{}
			}
			out[k][p] = "sim-" + p
		}
	}
	return out
}
