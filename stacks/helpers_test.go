package stacks

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"
)

// validAKS and validNatron return a valid config in decoded form; tests
// mutate a fresh copy and encode it as Pulumi would hand it to the program.
func validAKS() map[string]any {
	return map[string]any{
		"target": "aks",
		"aks":    map[string]any{"resourceGroup": "rg-acme-prod", "clusterName": "aks-acme-prod"},
		"pools": []any{
			map[string]any{"name": "a100", "sku": "Standard_NC24ads_A100_v4", "minNodes": 0, "maxNodes": 4, "zones": []any{"1", "2"}},
			map[string]any{"name": "h100spot", "sku": "Standard_NC40ads_H100_v5", "minNodes": 0, "maxNodes": 8, "spot": true, "spotMaxPrice": -1},
		},
	}
}

func validNatron() map[string]any {
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

// pool returns pools[i] of a decoded config for mutation.
func pool(c map[string]any, i int) map[string]any {
	return c["pools"].([]any)[i].(map[string]any)
}

// encode renders a decoded config as raw values keyed without namespace.
func encode(t testing.TB, c map[string]any) map[string]string {
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

// namespaced prefixes every key with the project namespace.
func namespaced(raw map[string]string) map[string]string {
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		out[Namespace+":"+k] = v
	}
	return out
}

// deepCopy copies decoded JSON so table cases do not share state.
func deepCopy(c map[string]any) map[string]any {
	b, _ := json.Marshal(c)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return maps.Clone(out)
}

func fmtAll(v any) string { return fmt.Sprintf("%v %+v %#v %s", v, v, v, v) }
