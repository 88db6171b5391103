package tests

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"

	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/stackfile"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// devConfig is the dev stack file as typed config, rendering into dir.
func devConfig(t *testing.T, dir string) *config.Config {
	t.Helper()
	c := stacktest.Config(t, "dev")
	c.RenderDir = dir
	c.Platform.ChartDir = filepath.Join(pulumitest.SharedDir(t), "charts")
	return c
}

// A fleet preview through the real engine: several customer stacks at once,
// one of them invalid, which fails alone and before the engine starts.
func TestAutomationFleetPreview(t *testing.T) {
	t.Parallel()
	e, rec := recordingEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	bad := devConfig(t, t.TempDir())
	bad.Pools[0].MinNodes, bad.Pools[0].MaxNodes = 3, 1
	fleet := []automation.CustomerStack{
		{Name: "acme", Config: devConfig(t, t.TempDir())},
		{Name: "globex", Config: bad},
		{Name: "initech", Config: devConfig(t, t.TempDir())},
		{Name: "umbrella", Config: devConfig(t, t.TempDir())},
	}
	results := automation.PreviewFleet(ctx, fleet, e, 2)
	if len(results) != len(fleet) {
		t.Fatalf("%d results for %d stacks", len(results), len(fleet))
	}
	for i, r := range results {
		if r.Stack != fleet[i].Name {
			t.Errorf("result %d is for %s, want %s", i, r.Stack, fleet[i].Name)
		}
		if r.Stack == "globex" {
			var ce *plan.ConfigError
			if !errors.As(r.Err, &ce) || !strings.Contains(r.Err.Error(), "gpu-node-pools:pools[0].maxNodes: must be >= minNodes (3), got 1") {
				t.Errorf("globex: want the config error, got %v", r.Err)
			}
			continue
		}
		if r.Err != nil {
			t.Errorf("%s failed: %v", r.Stack, r.Err)
			continue
		}
		// stack, 2 providers, per pool a component and 3 objects, the
		// platform's 6 resources and the GPU operator chart's objects
		if r.Changes["create"] <= 1+2+3*4+6 || r.Changes["create"] != results[0].Changes["create"] {
			t.Errorf("%s: changes %v, want the same creates as %s (%v)", r.Stack, r.Changes, results[0].Stack, results[0].Changes)
		}
	}
	if rec.count() == 0 {
		t.Error("no engine events reached the caller")
	}
}

// One customer stack through its whole life: up, outputs, an unchanged
// preview, refresh, destroy; and cancellation through the context.
func TestAutomationStackLifecycle(t *testing.T) {
	t.Parallel()
	e, rec := recordingEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	render := t.TempDir()
	cfg := devConfig(t, render)
	cfg.Cluster.(*natron.Cluster).Kubeconfig = secret.Secret(pulumitest.SecretMarker + "-kubeconfig")
	s, err := automation.OpenStack(ctx, "acme", cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	outputs, changes, err := s.Up(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if changes["create"] <= 1+2+3*4+6 || outputs["target"].Value != "natron" || outputs["renderDir"].Value != render {
		t.Errorf("up: changes %v, outputs %v", changes, outputs)
	}
	got, err := s.Outputs(ctx)
	if err != nil || got["pools"].Value == nil {
		t.Fatalf("outputs: %v %v", got, err)
	}
	// The dev stack's model gives only name, pool, source, model and
	// minReplicas: the defaults it runs with are in the outputs, with the
	// id clients ask for.
	model, _ := got["models"].Value.(map[string]any)["llama3-8b"].(map[string]any)
	sizing, _ := model["sizing"].(map[string]any)
	want := map[string]any{"tensorParallel": 1.0, "maxModelLen": 131072.0, "gpuMemoryUtilization": 0.9, "minReplicas": 0.0,
		"maxReplicas": 32.0, "queueDepthTarget": 5.0, "dtype": "auto"}
	for k, v := range want {
		if sizing[k] != v {
			t.Errorf("outputs models.llama3-8b.sizing.%s = %v, want %v (all: %v)", k, sizing[k], v, model)
		}
	}
	if model["model"] != "llama3-8b" || sizing["kvCacheTokens"].(float64) < 131072 {
		t.Errorf("outputs models.llama3-8b: %v", model)
	}
	// The dev stack prices its profiles: the infer pool (h100-80gb-x8 at
	// 19.5 an hour, 0-4 nodes; its model scales to zero) costs nothing at
	// minNodes and when idle, 4 × 19.5 × 730 at maxNodes.
	infer, _ := got["pools"].Value.(map[string]any)["infer"].(map[string]any)
	cost, _ := infer["cost"].(map[string]any)
	totals, _ := got["cost"].Value.(map[string]any)["USD"].(map[string]any)
	if cost["monthlyAtMinNodes"] != 0.0 || cost["monthlyAtMaxNodes"] != 56940.0 || cost["monthlyExpected"] != 0.0 || totals["monthlyAtMaxNodes"] == nil {
		t.Errorf("outputs pools.infer.cost %v, cost %v", cost, got["cost"].Value)
	}
	preview, err := s.Preview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pulumitest.NoChanges(t, "preview after up", preview)
	// Rendered objects exist only as files: refresh says so instead of
	// failing on an unreachable cluster.
	if _, err := s.Refresh(ctx); !errors.Is(err, automation.ErrRenderOnly) {
		t.Errorf("refresh of a render stack: want ErrRenderOnly, got %v", err)
	}
	backend := strings.TrimPrefix(e.BackendURL, "file://")
	if hits := pulumitest.FilesContaining(t, pulumitest.SecretMarker, backend, render, filepath.Join(e.WorkDir, "acme")); len(hits) > 0 {
		t.Errorf("secret marker in plain text in %v", hits)
	}
	if where := rec.leaks(pulumitest.SecretMarker); len(where) > 0 {
		t.Errorf("secret marker in plain text in the %v", where)
	}
	if _, err := s.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	// Opened again without its batch jobs: the key leaves the stack's
	// config, the others stay.
	cfg.BatchJobs = nil
	if _, err := automation.OpenStack(ctx, "acme", cfg, e); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(e.WorkDir, "acme", "Pulumi.acme.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(file), "gpu-node-pools:batchJobs") || !strings.Contains(string(file), "gpu-node-pools:models") {
		t.Errorf("the stack's config after batchJobs was dropped:\n%s", file)
	}

	canceled, stop := context.WithCancel(ctx)
	stop()
	if _, err := s.Preview(canceled); err == nil {
		t.Error("a preview with a canceled context must fail")
	}
}

// A customer's stack file loads as the typed config an internal tool
// drives, its secure values decrypted by the stack's own secrets provider
// through the real engine: the same config the stack file gives the
// program, with the real secrets in place of the test reader's markers.
func TestLoadStackFile(t *testing.T) {
	t.Parallel()
	root := pulumitest.PulumiRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := pulumitest.CopyProject(t)
	backend := "file://" + t.TempDir()
	env := pulumitest.EngineEnv(t, root, backend)
	env["PULUMI_CONFIG_PASSPHRASE"] = devPassphrase
	e := automation.Engine{BackendURL: backend, PulumiRoot: root,
		Env: map[string]string{"PULUMI_CONFIG_PASSPHRASE": devPassphrase, "PULUMI_HOME": env["PULUMI_HOME"]}}
	// The stack exists in the backend, as `make preview` leaves it.
	cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auto.UpsertStackLocalSource(ctx, "dev", dir, auto.Pulumi(cmd), auto.EnvVars(env)); err != nil {
		t.Fatal(err)
	}

	got, err := automation.LoadStack(ctx, dir, "dev", e)
	if err != nil {
		t.Fatal(err)
	}
	want := stacktest.Config(t, "dev") // secure values as pulumitest.SecretMarker and their path
	secrets := map[string]*secret.Secret{
		"storage.accessKey": &got.Storage.AccessKey, "storage.secretKey": &got.Storage.SecretKey, "serving.apiKey": &got.Serving.APIKey,
		"storage.backupAccessKey": &got.Storage.BackupAccessKey, "storage.backupSecretKey": &got.Storage.BackupSecretKey,
		"backup.location.accessKey": &got.Backup.Location.AccessKey, "backup.location.secretKey": &got.Backup.Location.SecretKey,
		"vectorDBs[0].password": &got.VectorDBs[0].Password,
	}
	for k, s := range secrets {
		if v := string(*s); v == "" || strings.Contains(v, pulumitest.SecretMarker) || strings.HasPrefix(v, "v1:") {
			t.Errorf("%s was not decrypted: %q", k, v)
		}
		*s = secret.Secret(stackfile.Placeholder(pulumitest.SecretMarker, "gpu-node-pools:"+k))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadStack differs from Pulumi.dev.yaml (-file +loaded):\n%s", diff)
	}
	if _, err := automation.LoadStack(ctx, dir, "no-such-stack", e); err == nil || !strings.Contains(err.Error(), "no-such-stack") {
		t.Errorf("a stack that does not exist: %v", err)
	}
}

// The Automation API as documented, with no hidden knob: the charts come
// from the Engine (not from this process's environment, which the
// program, running in this process, would otherwise read), and a relative
// renderDir lands in the project directory, not in the caller's working
// directory. Offline, the upstream chart repositories are unreachable, so
// the render succeeds only with the Engine's chart directory.
func TestRenderTakesChartsAndPathsFromTheEngine(t *testing.T) {
	t.Setenv(plan.ChartDirEnv, "") // not parallel: Setenv
	cfg := stacktest.Config(t, "dev")
	cfg.RenderDir, cfg.Platform.ChartDir = "rendered-acme", ""
	e, _ := recordingEngine(t)
	e.ProjectDir, e.ChartDir = t.TempDir(), filepath.Join(pulumitest.SharedDir(t), "charts")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := automation.Render(ctx, "dev", cfg, e); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.ProjectDir, "rendered-acme", "workload")); err != nil {
		t.Errorf("the render is not in the project directory: %v", err)
	}
	if _, err := os.Stat("rendered-acme"); err == nil {
		t.Error("the render went to the working directory")
	}
}

// A preview's progress is one line per resource and the summary, as make
// preview's; the property diff (CRD schemas and all) only with Engine.Diff.
func TestPreviewProgressIsOneLinePerResource(t *testing.T) {
	t.Parallel()
	lines := map[bool]string{}
	for _, diff := range []bool{false, true} {
		e, rec := recordingEngine(t)
		e.Diff = diff
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		s, err := automation.OpenStack(ctx, "acme", devConfig(t, t.TempDir()), e)
		if err != nil {
			t.Fatal(err)
		}
		changes, err := s.Preview(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		lines[diff] = rec.progress.String()
		rec.mu.Unlock()
		n, creates := strings.Count(lines[diff], "\n"), changes["create"]
		t.Logf("diff %v: %d lines for %d creates", diff, n, creates)
		if !diff && (n > creates+30 || strings.Contains(lines[diff], "openAPIV3Schema")) {
			t.Errorf("%d lines for %d resources without the diff:\n%s", n, creates, lines[diff])
		}
	}
	if !strings.Contains(lines[true], "openAPIV3Schema") {
		t.Error("Engine.Diff did not add the property diff")
	}
}
