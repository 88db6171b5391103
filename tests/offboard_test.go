package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/natron/gpu-node-pools/components/backup"
	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// Offboarding a bare-metal customer whose pools are protected, as make
// destroy does it (the stackctl binary, in the stack's project directory,
// with the environment make env gives): refused while the pools are
// protected, stopped by a wrong confirmation, each time with nothing
// changed; then, unprotected and confirmed, every object is gone from the
// API server, and the stack, its state and its stack file are removed.
func TestMakeDestroyOffboardsABareMetalCustomer(t *testing.T) {
	t.Parallel()
	e, _ := recordingEngine(t)
	e.Diff, e.Progress = false, nil
	srv := kubeapi.Start(t)
	crds := filepath.Join(pulumitest.SharedDir(t), "crds")
	srv.ApplyCRDs(t, filepath.Join(crds, "cluster-api"), filepath.Join(crds, "cluster-api-provider-metal3"),
		filepath.Join(crds, "kyverno", "kyverno.io_clusterpolicies.yaml"))
	installMonitoringCRDs(t, srv)
	srv.Kubectl(t, "create", "namespace", "capi-acme")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	// the pools and the platform on top, protected as a prod stack's are
	cfg := devConfig(t, "")
	cfg.GitOps, cfg.Models, cfg.BatchJobs, cfg.VectorDBs, cfg.Backup, cfg.Storage = gitops.Spec{}, nil, nil, nil, backup.Spec{}, nil
	protect := true
	cfg.Protect = &protect
	kc := secret.Secret(srv.KubeconfigYAML(t))
	block := *cfg.Cluster.(*natron.Cluster)
	block.Kubeconfig, block.ManagementKubeconfig = kc, kc
	cfg.Cluster = &block
	cfg.Platform.SkipAwait = true
	s, err := automation.OpenStack(ctx, "acme", cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Up(ctx); err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(e.WorkDir, "acme") // Pulumi.yaml and Pulumi.acme.yaml, as make preview leaves them
	machineDeployments := func() int {
		return len(strings.Fields(srv.Kubectl(t, "get", "machinedeployments.cluster.x-k8s.io", "-n", "capi-acme", "-o", "name")))
	}
	if n := machineDeployments(); n != len(cfg.Pools) {
		t.Fatalf("up made %d MachineDeployments, want %d", n, len(cfg.Pools))
	}

	backend := strings.TrimPrefix(e.BackendURL, "file://")
	stateFiles := func() []string {
		files, _ := filepath.Glob(filepath.Join(backend, ".pulumi", "stacks", "*", "acme.json*"))
		return files
	}
	if len(stateFiles()) == 0 {
		t.Fatalf("no state of stack acme in %s", backend)
	}

	stackctl := buildStackctl(t)
	env := pulumitest.EngineEnv(t, e.PulumiRoot, e.BackendURL)
	env["PULUMI_HOME"], env["PULUMI_CONFIG_PASSPHRASE"] = e.Env["PULUMI_HOME"], e.Env["PULUMI_CONFIG_PASSPHRASE"]
	destroy := func(stdin string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, stackctl, append([]string{"destroy", "-stack", "acme"}, args...)...)
		cmd.Dir, cmd.Stdin = project, strings.NewReader(stdin)
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := destroy("acme\n")
	if err == nil || !strings.Contains(out, "protected resources") || !strings.Contains(out, "make destroy STACK=acme UNPROTECT=1") {
		t.Errorf("protected pools without UNPROTECT: %v\n%s", err, out)
	}
	out2, err := destroy("acme-typo\n", "-unprotect")
	if err == nil || !strings.Contains(out2, "not confirmed") {
		t.Errorf("a wrong confirmation: %v\n%s", err, out2)
	}
	if n := machineDeployments(); n != len(cfg.Pools) {
		t.Fatalf("a refused destroy left %d of %d MachineDeployments:\n%s\n%s", n, len(cfg.Pools), out, out2)
	}
	if _, err := s.Preview(ctx); err != nil { // the stack and its state are intact
		t.Fatalf("after refused destroys: %v", err)
	}

	out, err = destroy("acme\n", "-unprotect")
	if err != nil {
		t.Fatalf("make destroy UNPROTECT=1: %v\n%s", err, out)
	}
	t.Log(out)
	for _, want := range []string{"Type the stack's name", "Removed stack acme"} {
		if !strings.Contains(out, want) {
			t.Errorf("make destroy printed no %q:\n%s", want, out)
		}
	}
	expectGone(t, srv)
	if _, err := os.Stat(filepath.Join(project, "Pulumi.acme.yaml")); !os.IsNotExist(err) {
		t.Errorf("the stack file is still there: %v", err)
	}
	if _, err := automation.SelectStack(ctx, project, "acme", e); err == nil {
		t.Error("the stack is still in the backend")
	}
	if left := stateFiles(); len(left) > 0 {
		t.Errorf("the backend still holds the stack's state: %v", left)
	}
}

// buildStackctl builds cmd/stackctl as make does, into the test's directory.
func buildStackctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stackctl")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/stackctl")
	cmd.Dir = pulumitest.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/stackctl: %v\n%s", err, out)
	}
	return bin
}
