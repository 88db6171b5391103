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
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// Every component starts the same way (component.Start): without its
// args, or without what they must hold, it registers nothing and says
// which component and what it needs.
func TestComponentsRefuseMissingArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		typ, need string
		start     func(ctx *pulumi.Context) error
	}{
		{platform.GPUPlatformType, "a workload provider", func(ctx *pulumi.Context) error {
			_, err := platform.NewGPUPlatform(ctx, "x", &platform.Args{})
			return err
		}},
		{policy.GPUPoliciesType, "a workload provider", func(ctx *pulumi.Context) error {
			_, err := policy.NewGPUPolicies(ctx, "x", nil)
			return err
		}},
		{logging.LogCollectorType, "a workload provider", func(ctx *pulumi.Context) error {
			_, err := logging.NewLogCollector(ctx, "x", nil)
			return err
		}},
		{serving.ModelServingType, "a workload provider", func(ctx *pulumi.Context) error {
			_, err := serving.NewModelServing(ctx, "x", &serving.Args{})
			return err
		}},
		{vectordb.VectorDBsType, "databases and a workload provider", func(ctx *pulumi.Context) error {
			_, err := vectordb.NewVectorDBs(ctx, "x", &vectordb.Args{})
			return err
		}},
		{backup.BackupsType, "a workload provider", func(ctx *pulumi.Context) error {
			_, err := backup.NewBackups(ctx, "x", nil)
			return err
		}},
		{gitops.DeliveryType, "a prefix, a gitops and a workload provider", func(ctx *pulumi.Context) error {
			_, err := gitops.NewDelivery(ctx, "x", &gitops.Args{})
			return err
		}},
		{aks.PoolType, "a pool and its cluster", func(ctx *pulumi.Context) error {
			_, err := aks.NewPool(ctx, "x", nil)
			return err
		}},
		{natron.PoolType, "a management provider", func(ctx *pulumi.Context) error {
			_, err := natron.NewPool(ctx, "x", &natron.PoolArgs{})
			return err
		}},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			m, err := pulumitest.Run(tc.start, "gpu-node-pools", "test", nil, nil)
			want := tc.typ + " x: args with " + tc.need + " are required"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want %q", err, want)
			}
			if n := len(m.Resources()); n != 0 {
				t.Errorf("registered %d resources", n)
			}
		})
	}
}
