package aks

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Each login turns Azure's interactive kubeconfig into one the provider
// can use unattended, with the arguments kubelogin's own converter writes
// (Azure/kubelogin pkg/internal/converter/convert.go at v0.2.19), read back
// by client-go as the provider reads it.
func TestConvertKubeconfig(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/entra-user-kubeconfig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	server := []string{"get-token", "--login", "", "--server-id", "6dae42f8-4368-4678-94ff-3960e28e3630"}
	for _, tc := range []struct {
		login string
		args  []string
	}{
		{LoginAzureCLI, nil},
		{LoginWorkloadIdentity, nil},
		{LoginSPN, []string{"--client-id", "80faf920-1908-4b52-b5ef-a8e7bedfc67a", "--tenant-id", "72f988bf-86f1-41af-91ab-2d7cd011db47", "--environment", "AzurePublicCloud"}},
	} {
		t.Run(tc.login, func(t *testing.T) {
			t.Parallel()
			out, err := ConvertKubeconfig(string(raw), tc.login)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := clientcmd.Load([]byte(out))
			if err != nil {
				t.Fatalf("client-go cannot read the converted kubeconfig: %v\n%s", err, out)
			}
			args := append(append([]string{}, server...), tc.args...)
			args[2] = tc.login
			want := &clientcmdapi.ExecConfig{
				Command: "kubelogin", Args: args, APIVersion: "client.authentication.k8s.io/v1beta1",
				InstallHint: "kubelogin is not installed", InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode,
			}
			if diff := cmp.Diff(want, cfg.AuthInfos["clusterUser_rg-acme_acme-prod"].Exec, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Config" }, cmp.Ignore())); diff != "" {
				t.Errorf("exec (-want +got):\n%s", diff)
			}
			if local := cfg.AuthInfos["local-admin"]; local == nil || local.Exec != nil || len(local.ClientCertificateData) == 0 {
				t.Errorf("a user without kubelogin changed: %+v", local)
			}
			if cfg.Clusters["acme-prod"].Server != "https://acme-prod-dns-12345678.hcp.westeurope.azmk8s.io:443" || cfg.CurrentContext != "acme-prod" {
				t.Errorf("cluster or context lost: %+v", cfg)
			}
		})
	}
	if _, err := ConvertKubeconfig("users:\n- name: u\n  user:\n    exec:\n      command: kubelogin\n      args: [get-token]\n", LoginAzureCLI); err == nil {
		t.Error("a kubelogin user without --server-id converted")
	}
}
