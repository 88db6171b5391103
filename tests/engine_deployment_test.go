package tests

import (
	"testing"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
)

// checkEngineDeployment checks a model's engine Deployment as the real
// provider wrote it (a rendered file, or the object an API server holds):
// its selector carries none of the chart's sample labels, the await suits
// a scaled-to-zero model, and, unless live (the API server defaults it),
// no spec.replicas that would reset KEDA's choice.
func checkEngineDeployment(t *testing.T, d map[string]any, live bool) {
	t.Helper()
	name, _ := helmtest.Get(d, "metadata", "name").(string)
	if _, set := helmtest.Get(d, "spec").(map[string]any)["replicas"]; set && !live {
		t.Errorf("%s sets spec.replicas: every chart change would reset KEDA's replicas", name)
	}
	sel, _ := helmtest.Get(d, "spec", "selector", "matchLabels").(map[string]any)
	for _, sample := range []string{"environment", "release"} {
		if v, ok := sel[sample]; ok {
			t.Errorf("%s selector has the chart's sample label %s=%v", name, sample, v)
		}
	}
	if helmtest.Get(d, "metadata", "annotations", "pulumi.com/skipAwait") != "true" {
		t.Errorf("%s: a scaled-to-zero engine must not be awaited: %v", name, helmtest.Get(d, "metadata", "annotations"))
	}
}

// checkLiveEngine reads a model's engine Deployment from the API server:
// checkEngineDeployment, and the replicas belong to no Pulumi field
// manager (server-side apply would otherwise reset KEDA's choice).
func checkLiveEngine(t *testing.T, srv *kubeapi.Server, model string) {
	t.Helper()
	var d map[string]any
	srv.GetJSON(t, &d, "deployment", serving.DeploymentName(model), "-n", "models", "--show-managed-fields")
	checkEngineDeployment(t, d, true)
	managed, _ := helmtest.Get(d, "metadata", "managedFields").([]any)
	if len(managed) == 0 {
		t.Fatalf("engine Deployment %s has no managed fields", model)
	}
	for _, m := range managed {
		mf := m.(map[string]any)
		spec, _ := helmtest.Get(mf, "fieldsV1", "f:spec").(map[string]any)
		if _, owns := spec["f:replicas"]; owns {
			t.Errorf("field manager %v owns the engine's spec.replicas", mf["manager"])
		}
	}
}
