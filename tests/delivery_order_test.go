package tests

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/testkit/proc"
	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

func asList(v any) []any { l, _ := v.([]any); return l }

func dig1(v any, path ...string) any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// Every Secret or ConfigMap a pod of the rendered workload tree reads is
// delivered no later than the pod: as an object of its layer or an earlier
// one, or by an ExternalSecret there (External Secrets Operator writes
// spec.target.name, else the ExternalSecret's name). A GitOps tool applies
// the layers in order and waits for each to be healthy (Argo CD sync waves,
// gitops-engine pkg/sync/sync_context.go; Flux dependsOn with wait): a pod
// whose Secret comes a layer later never starts, its layer never becomes
// healthy, and the later layer is never applied. Secrets made at run time
// by a controller of an earlier layer are named with the controller.
func TestDeliveryOrderProvidesWhatPodsRead(t *testing.T) {
	t.Parallel()
	dir, _ := renderDev(t)
	objs := treeObjects(t, dir)
	pods := 0
	for _, lo := range objs {
		if _, _, ok := podSpecOf(lo.o); ok {
			pods++
		}
	}
	if pods < 3 {
		t.Fatalf("found %d pod templates in the tree", pods)
	}
	for _, problem := range inputsBeforePods(objs) {
		t.Error(problem)
	}
}

// An engine Deployment's progress deadline covers its model's cold start
// (a GPU node, the image, the weights: the wake route's readiness is the
// same budget). The chart's 1200 s (vllm-stack 0.1.12) made the Deployment
// ProgressDeadlineExceeded while its first replica was still coming up,
// which Argo CD judges Degraded (gitops-engine pkg/health/
// health_deployment.go) and Flux's wait a failure.
func TestEngineDeadlineCoversTheColdStart(t *testing.T) {
	t.Parallel()
	dir, cfg := renderDev(t)
	p, err := plan.Resolve(cfg, "dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Serving.Engines) == 0 {
		t.Fatal("the dev stack serves no vLLM model")
	}
	for _, eng := range p.Serving.Engines {
		matches, _ := filepath.Glob(filepath.Join(dir, gitops.WorkloadTree, "*", "apps_v1-deployment-*-vllm-"+eng.Name+"-*.yaml"))
		if len(matches) != 1 {
			t.Fatalf("engine %s: %d Deployment files", eng.Name, len(matches))
		}
		b, err := os.ReadFile(matches[0])
		if err != nil {
			t.Fatal(err)
		}
		var dep map[string]any
		if err := yaml.Unmarshal(b, &dep); err != nil {
			t.Fatal(err)
		}
		deadline, _ := dig1(dep, "spec", "progressDeadlineSeconds").(float64)
		if cold := serving.ColdStartSeconds(eng); int(deadline) < cold {
			t.Errorf("engine %s: progressDeadlineSeconds %v, a cold start takes up to %d s: the Deployment goes Degraded on its first start", eng.Name, deadline, cold)
		}
	}
}

// renderDev is the dev stack rendered through the real engine, once per
// run (the tests that call it only read it: the goldens pin it), and the
// config it rendered.
func renderDev(t *testing.T) (string, *config.Config) {
	t.Helper()
	devRender.once.Do(func() {
		defer func() { devRender.skipped = t.Skipped() }() // a prerequisite missing
		e, _ := recordingEngine(t)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		dir := filepath.Join(proc.RunDir(), "rendered-dev")
		if _, err := automation.Render(ctx, "dev", devConfig(t, dir), e); err != nil {
			t.Fatal(err)
		}
		devRender.dir = dir
	})
	if devRender.skipped {
		t.Skip("skipping: the dev stack's render lacks a prerequisite: see the first test that made it")
	}
	if devRender.dir == "" {
		t.Fatal("the dev stack's render failed: see the first test that made it")
	}
	return devRender.dir, devConfig(t, devRender.dir)
}

// devRender is the dev stack's render, made once per run for the tests
// that only read it (renderDev).
var devRender struct {
	once    sync.Once
	dir     string
	skipped bool
}
