package stacktest

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/stacks/config"
)

// AKS and Natron return a valid config in decoded form; tests mutate a
// fresh copy and encode it as Pulumi would hand it to the program.
func AKS() map[string]any {
	return map[string]any{
		"target": "aks",
		"aks":    map[string]any{"resourceGroup": "rg-acme-prod", "clusterName": "aks-acme-prod"},
		"pools": []any{
			map[string]any{"name": "a100", "sku": "Standard_NC24ads_A100_v4", "minNodes": 0, "maxNodes": 4, "aks": map[string]any{"zones": []any{"1", "2"}}},
			map[string]any{"name": "h100spot", "sku": "Standard_NC40ads_H100_v5", "minNodes": 0, "maxNodes": 8, "spot": true, "aks": map[string]any{"spotMaxPrice": -1}},
		},
	}
}

func Natron() map[string]any {
	return map[string]any{
		"target": "natron",
		"natron": map[string]any{
			"site": "natron-cloud", "clusterName": "acme", "namespace": "capi-acme", "kubernetesVersion": "v1.33.4",
			"image": map[string]any{
				"url": "https://images.example/u.qcow2", "checksum": "https://images.example/u.qcow2.sha256sum",
				"checksumType": "sha256", "diskFormat": "qcow2",
			},
			"kubeconfig":           "apiVersion: v1\nkind: Config\n",
			"managementKubeconfig": "apiVersion: v1\nkind: Config\n",
		},
		"pools": []any{
			map[string]any{"name": "infer", "sku": "h100-80gb-x8", "minNodes": 0, "maxNodes": 4},
		},
	}
}

// WithServing adds a weights store, one model and one batch job to a valid
// config: 8B on the 1-GPU A100 pool (aks) or the 8-GPU H100 pool (natron).
func WithServing(c map[string]any) map[string]any {
	poolName := Pool(c, 0)["name"]
	if c["target"] == "aks" {
		c["storage"] = map[string]any{"kind": "azureBlob", "account": "acmemodels", "clientId": "9a4d1c9e-3b6f-4d5a-8f2e-1c7b5e0d4a21", "identityName": "acme-models-reader"}
		c["models"] = []any{map[string]any{
			"name": "llama3-8b", "pool": poolName, "source": "az://models/llama3-8b", "parametersB": 8, "dtype": "bfloat16",
			"tensorParallel": 1, "maxModelLen": 8192, "gpuMemoryUtilization": 0.9, "minReplicas": 0, "maxReplicas": 4, "queueDepthTarget": 5,
		}}
		// the storage account's private endpoint subnet and Entra ID
		c["serving"] = map[string]any{"downloadCIDRs": []any{"10.40.8.0/24", "20.190.128.0/18", "40.126.0.0/18"}}
	} else {
		c["storage"] = map[string]any{"kind": "s3", "endpoint": "https://s3.example", "accessKey": "ak", "secretKey": "sk"}
		c["models"] = []any{map[string]any{
			"name": "llama3-8b", "pool": poolName, "source": "s3://models/llama3-8b", "parametersB": 8, "dtype": "bfloat16",
			"tensorParallel": 1, "maxModelLen": 8192, "gpuMemoryUtilization": 0.9, "minReplicas": 0, "maxReplicas": 4, "queueDepthTarget": 5,
		}}
	}
	c["batchJobs"] = []any{map[string]any{"name": "embed-nightly", "pool": poolName, "image": "registry.example/embed:1", "schedule": "0 2 * * *", "gpus": 1}}
	regs := []any{"registry.example"}
	for _, r := range policy.DefaultRegistries {
		regs = append(regs, r)
	}
	c["policies"] = map[string]any{"allowedRegistries": map[string]any{"registries": regs}}
	return c
}

// ServingAKS and ServingNatron are AKS and Natron with serving.
func ServingAKS() map[string]any    { return WithServing(AKS()) }
func ServingNatron() map[string]any { return WithServing(Natron()) }

// Model and Batch return the first model and batch job for mutation.
func Model(c map[string]any) map[string]any { return c["models"].([]any)[0].(map[string]any) }
func Batch(c map[string]any) map[string]any { return c["batchJobs"].([]any)[0].(map[string]any) }

// Pool returns pools[i] of a decoded config for mutation.
func Pool(c map[string]any, i int) map[string]any {
	return c["pools"].([]any)[i].(map[string]any)
}

// Encode renders a decoded config as raw values keyed without namespace.
func Encode(t testing.TB, c map[string]any) map[string]string {
	t.Helper()
	raw := map[string]string{}
	for k, v := range c {
		switch x := v.(type) {
		case string:
			raw[k] = x
		case bool:
			raw[k] = fmt.Sprint(x)
		default:
			b, err := json.Marshal(x)
			if err != nil {
				t.Fatal(err)
			}
			raw[k] = string(b)
		}
	}
	return raw
}

// Namespaced prefixes every key with the project namespace.
func Namespaced(raw map[string]string) map[string]string {
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		out[config.Key(k)] = v
	}
	return out
}

// DeepCopy copies decoded JSON so table cases do not share state.
func DeepCopy(c map[string]any) map[string]any {
	b, _ := json.Marshal(c)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return maps.Clone(out)
}
