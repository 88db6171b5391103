package tests

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/components/backup"
	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/logging"
	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// Every component refuses missing arguments with an error that names it,
// instead of panicking half-way through a stack, and registers nothing.
func TestComponentsRefuseMissingArgs(t *testing.T) {
	t.Parallel()
	for name, build := range map[string]func(ctx *pulumi.Context) error{
		"gpu platform":  func(ctx *pulumi.Context) error { _, err := platform.NewGPUPlatform(ctx, "gpu", nil); return err },
		"gpu policies":  func(ctx *pulumi.Context) error { _, err := policy.NewGPUPolicies(ctx, "policies", nil); return err },
		"model serving": func(ctx *pulumi.Context) error { _, err := serving.NewModelServing(ctx, "serving", nil); return err },
		"backups":       func(ctx *pulumi.Context) error { _, err := backup.NewBackups(ctx, "backup", nil); return err },
		"log collector": func(ctx *pulumi.Context) error { _, err := logging.NewLogCollector(ctx, "logging", nil); return err },
		"gitops delivery": func(ctx *pulumi.Context) error {
			_, err := gitops.NewDelivery(ctx, "gitops", &gitops.Args{Prefix: "acme-gpu"}) // no providers
			return err
		},
		"aks pool": func(ctx *pulumi.Context) error { _, err := aks.NewPool(ctx, "a100", nil); return err },
		"bare-metal pool": func(ctx *pulumi.Context) error {
			_, err := natron.NewPool(ctx, "infer", &natron.PoolArgs{}) // no management provider
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, err := pulumitest.Run(build, "gpu-node-pools", "test", nil, nil)
			if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "required") {
				t.Errorf("want an error naming %s and what is required, got %v", name, err)
			}
			if rs := m.Resources(); len(rs) != 0 {
				t.Errorf("registered %d resources", len(rs))
			}
		})
	}
}
