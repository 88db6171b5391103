package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/program"
)

// BenchmarkMakePreview is the everyday loop: a warm `make preview` of the
// dev stack (the check, then its render in one engine run with the
// program installed once per change), in a copy of the project after one
// untimed run.
func BenchmarkMakePreview(b *testing.B) {
	n := newNewcomer(b)
	if out, err := n.sh("make -s preview"); err != nil {
		b.Fatalf("make preview: %v\n%s", err, out)
	}
	b.ResetTimer()
	for range b.N {
		if out, err := n.sh("make -s preview"); err != nil {
			b.Fatalf("make preview: %v\n%s", err, out)
		}
	}
}

// BenchmarkProdStack is one evaluation of the prod stack under mocks.
func BenchmarkProdStack(b *testing.B) {
	cfg, secrets, err := pulumitest.StackConfig("prod")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pulumitest.Run(program.Program, "gpu-node-pools", "prod", cfg, secrets); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPools shows how program time grows with the number of pools, on
// both targets.
func BenchmarkPools(b *testing.B) {
	for _, target := range []string{"aks", "natron"} {
		for _, n := range []int{20, 200} {
			b.Run(fmt.Sprintf("%s/%d", target, n), func(b *testing.B) {
				cfg := generatedStack(target, n)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := pulumitest.Run(program.Program, "gpu-node-pools", "bench", cfg, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func generatedStack(target string, n int) map[string]string {
	sku := map[string]string{"aks": "Standard_NC24ads_A100_v4", "natron": "h100-80gb-x8"}[target]
	pools := make([]string, n)
	for i := range pools {
		pools[i] = fmt.Sprintf(`{"name":"p%d","sku":%q,"minNodes":0,"maxNodes":%d,"labels":{"team":"t%d"}}`, i, sku, 1+i%8, i%5)
	}
	cfg := map[string]string{
		"gpu-node-pools:target": target,
		"gpu-node-pools:pools":  "[" + strings.Join(pools, ",") + "]",
	}
	if target == "aks" {
		cfg["gpu-node-pools:aks"] = `{"resourceGroup":"rg","clusterName":"aks"}`
	} else {
		cfg["gpu-node-pools:renderDir"] = "rendered"
		cfg["gpu-node-pools:natron"] = `{"site":"flex-stack","clusterName":"c","namespace":"n","kubernetesVersion":"v1.33.4",` +
			`"image":{"url":"https://i.example/u.qcow2","checksum":"abc"}}`
	}
	return cfg
}

// BenchmarkFleetPreview previews 10 customer stacks through the real engine,
// one at a time and four at a time.
func BenchmarkFleetPreview(b *testing.B) {
	for _, parallel := range []int{1, 4} {
		b.Run(fmt.Sprintf("parallel=%d", parallel), func(b *testing.B) {
			root := pulumitest.PulumiRoot(b)
			backend := b.TempDir()
			env := pulumitest.EngineEnv(b, root, "file://"+backend)
			e := automation.Engine{
				BackendURL: "file://" + backend, SecretsProvider: "passphrase", PulumiRoot: root, WorkDir: b.TempDir(),
				Env: map[string]string{"PULUMI_CONFIG_PASSPHRASE": env["PULUMI_CONFIG_PASSPHRASE"], "PULUMI_HOME": env["PULUMI_HOME"]},
			}
			fleet := make([]automation.CustomerStack, 10)
			for i := range fleet {
				cfg, _, errs := config.Decode(pulumitest.Unqualified(generatedStack("natron", 4)))
				if len(errs) > 0 {
					b.Fatal(errs)
				}
				cfg.RenderDir = b.TempDir()
				cfg.Platform.ChartDir = filepath.Join(pulumitest.SharedDir(b), "charts") // offline
				fleet[i] = automation.CustomerStack{Name: fmt.Sprintf("customer%02d", i), Config: cfg}
			}
			b.ReportAllocs()
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
				for _, r := range automation.PreviewFleet(ctx, fleet, e, parallel) {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
				cancel()
			}
		})
	}
}
