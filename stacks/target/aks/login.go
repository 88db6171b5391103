package aks

import (
	"cmp"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// How the Kubernetes provider signs in to an Entra ID-integrated cluster
// (aks.login). Azure hands out a kubeconfig whose user runs kubelogin with
// --login devicecode, which waits for a person at a browser: in CI and
// under the Automation API it never returns.
const (
	// LoginAzureCLI uses the signed-in Azure CLI (az login, or azure/login
	// in a workflow).
	LoginAzureCLI = "azurecli"
	// LoginWorkloadIdentity uses a federated token: AZURE_CLIENT_ID,
	// AZURE_TENANT_ID and AZURE_FEDERATED_TOKEN_FILE.
	LoginWorkloadIdentity = "workloadidentity"
	// LoginSPN uses a service principal: AZURE_CLIENT_ID and
	// AZURE_CLIENT_SECRET (kubelogin reads them over the kubeconfig's).
	LoginSPN = "spn"
)

// Logins are the aks.login values.
var Logins = []string{LoginAzureCLI, LoginWorkloadIdentity, LoginSPN}

// LoginMode is the cluster's login, azurecli unless set.
func (c *Cluster) LoginMode() string { return cmp.Or(c.Login, LoginAzureCLI) }

// ConvertKubeconfig rewrites every kubelogin user of a kubeconfig to sign
// in non-interactively with login, as `kubelogin convert-kubeconfig -l
// <login>` does (Azure/kubelogin pkg/internal/converter/convert.go at
// v0.2.19): the exec becomes `kubelogin get-token --login <login>
// --server-id <id>`, and for spn the kubeconfig's --client-id, --tenant-id
// and --environment stay; the credentials come from the environment. Users
// that do not run kubelogin (local accounts) are left as they are.
func ConvertKubeconfig(raw, login string) (string, error) {
	var kc map[string]any
	if err := yaml.Unmarshal([]byte(raw), &kc); err != nil {
		return "", fmt.Errorf("aks kubeconfig: %w", err)
	}
	users, _ := kc["users"].([]any)
	for _, u := range users {
		user, _ := u.(map[string]any)
		spec, _ := user["user"].(map[string]any)
		exec, _ := spec["exec"].(map[string]any)
		if command, _ := exec["command"].(string); !strings.Contains(strings.ToLower(command), "kubelogin") {
			continue
		}
		old := execArgs(exec)
		serverID := old["--server-id"]
		if serverID == "" {
			return "", fmt.Errorf("aks kubeconfig user %v: kubelogin needs --server-id, which the kubeconfig lacks", user["name"])
		}
		args := []any{"get-token", "--login", login, "--server-id", serverID}
		if login == LoginSPN {
			for _, k := range []string{"--client-id", "--tenant-id", "--environment"} {
				if v := old[k]; v != "" {
					args = append(args, k, v)
				}
			}
		}
		converted := map[string]any{
			"apiVersion": "client.authentication.k8s.io/v1beta1",
			"command":    "kubelogin",
			"args":       args,
		}
		if hint, _ := exec["installHint"].(string); hint != "" {
			converted["installHint"] = hint
		}
		spec["exec"] = converted
	}
	out, err := yaml.Marshal(kc)
	if err != nil {
		return "", fmt.Errorf("aks kubeconfig: %w", err)
	}
	return string(out), nil
}

// execArgs reads an exec's "--flag value" pairs.
func execArgs(exec map[string]any) map[string]string {
	list, _ := exec["args"].([]any)
	out := map[string]string{}
	for i := 0; i+1 < len(list); i++ {
		k, _ := list[i].(string)
		if v, ok := list[i+1].(string); ok && strings.HasPrefix(k, "--") && !strings.HasPrefix(v, "--") {
			out[k] = v
			i++
		}
	}
	return out
}
