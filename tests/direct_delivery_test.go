package tests

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/internal/testkit/delivery"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// hostNamespaces are the customer's own namespaces a direct stack writes
// into: its Cluster API cluster's, its Velero's, its pgvector clients'.
var hostNamespaces = []string{"capi-acme", "velero", "rag-app"}

// directConfig is a stack's config for applying it with the engine to the
// simulated cluster kc reaches (no render, no GitOps), after the changes.
func directConfig(t *testing.T, stack string, kc secret.Secret, changes ...func(*config.Config)) *config.Config {
	t.Helper()
	cfg := stacktest.Config(t, stack)
	if block, ok := cfg.Cluster.(*natron.Cluster); ok {
		// the management cluster is the same simulated cluster
		block.Kubeconfig, block.ManagementKubeconfig = kc, kc
	}
	cfg.RenderDir, cfg.GitOps = "", gitops.Spec{}
	cfg.Platform.ChartDir = filepath.Join(pulumitest.SharedDir(t), "charts")
	// The engine applies; convergence is judged below by the same health
	// rules as a GitOps delivery.
	cfg.Platform.SkipAwait = true
	if cfg.Serving.APIKey == "" { // the random provider cannot be built here
		cfg.Serving.APIKey = secret.Secret("sim-api-key-of-the-simulated-cluster")
	}
	for _, change := range changes {
		change(cfg)
	}
	return cfg
}

// openDirect opens the stack that applies cfg to the simulated cluster
// kc reaches: a bare-metal stack whole (its MachineDeployments go to the
// same cluster as its management cluster), another target's Kubernetes
// side only (its pools are cloud resources no plugin here can make).
func openDirect(ctx context.Context, t *testing.T, stack string, cfg *config.Config, kc secret.Secret, e automation.Engine) *automation.Stack {
	t.Helper()
	var s *automation.Stack
	var err error
	if _, ok := cfg.Cluster.(*natron.Cluster); ok {
		s, err = automation.OpenStack(ctx, stack+"-sim", cfg, e)
	} else {
		s, err = automation.OpenWorkloadStack(ctx, stack+"-sim", cfg, kc, e)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// upDirect applies a stack's Kubernetes side to the simulated cluster
// through the real engine and the workload program, and waits until the
// cluster's workloads converge.
func upDirect(t *testing.T, s *automation.Stack, c *delivery.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if _, _, err := s.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	objs, err := c.Workloads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	requireConverged(t, c, objs)
}
