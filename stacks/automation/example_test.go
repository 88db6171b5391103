package automation_test

import (
	"context"
	"fmt"
	"os"

	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// Preview a fleet of customer stacks from internal tooling: one typed
// config loaded from a customer's stack file, one built by hand, at most
// two previews at a time. A stack's failure (an invalid config, a cluster
// that does not answer) is its own result; the others go on.
func ExamplePreviewFleet() {
	ctx := context.Background()
	e := automation.Engine{
		BackendURL:      "file:///var/lib/gpu-node-pools/state", // or s3://, azblob://, Pulumi Cloud
		SecretsProvider: "passphrase",                           // or azurekeyvault://...
		Env:             map[string]string{"PULUMI_CONFIG_PASSPHRASE": os.Getenv("FLEET_PASSPHRASE")},
		PulumiRoot:      os.Getenv("PULUMI_ROOT"), // the directory above the toolchain's bin/
		Progress:        os.Stdout,
	}

	// A customer's Pulumi.acme.yaml as typed config, its secure values
	// decrypted by the stack's own secrets provider.
	acme, err := automation.LoadStack(ctx, "/src/gpu-node-pools", "acme", e)
	if err != nil {
		fmt.Println(err) // names every problem of the stack file
		return
	}
	acme.Pools[0].MaxNodes = 8

	// A new customer, by hand: the target's block and one pool.
	globex := &config.Config{
		Target: "natron",
		Cluster: &natron.Cluster{
			Site: "flex-stack", ClusterName: "globex", Namespace: "capi-globex", KubernetesVersion: "v1.33.4",
			Image:                natron.MachineImage{URL: "https://images.example/ubuntu-2404.qcow2", Checksum: "https://images.example/ubuntu-2404.qcow2.sha256sum"},
			Kubeconfig:           secret.Secret(os.Getenv("GLOBEX_KUBECONFIG")),
			ManagementKubeconfig: secret.Secret(os.Getenv("FLEX_STACK_MANAGEMENT_KUBECONFIG")),
		},
		Pools: []gpupool.Spec{{Name: "h100", SKU: "h100-80gb-x8", MinNodes: 0, MaxNodes: 4}},
	}

	fleet := []automation.CustomerStack{{Name: "acme", Config: acme}, {Name: "globex", Config: globex}}
	for _, r := range automation.PreviewFleet(ctx, fleet, e, 2) {
		if r.Err != nil {
			fmt.Printf("%s: %v\n", r.Stack, r.Err)
			continue
		}
		fmt.Printf("%s: %v in %s\n", r.Stack, r.Changes, r.Elapsed)
	}
}
