package serving_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/components/gpupool"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/tests/pulumitest"
)

func get(o any, path ...string) any {
	for _, p := range path {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

// The real vllm-stack chart renders a 70B model, sharded over 4 H100s of a
// spot-free bare-metal pool, the way the issue asks: GPU requests, pool
// tolerations and affinity, load-aware probes, the read-only weights cache,
// the API key from its Secret, queue-depth scaling and a ServiceMonitor.
func TestVLLMStackRendersTheEngine(t *testing.T) {
	t.Parallel()
	sku, _ := catalog.Lookup(catalog.Natron, "h100-80gb-x8")
	pool := gpupool.NewFacts(gpupool.Spec{Name: "infer", SKU: sku.Name, MaxNodes: 2}, sku)
	e := serving.Engine{
		Model: serving.Model{Name: "llama3-70b", ParametersB: 70, Dtype: "bfloat16", TensorParallel: 4, GPUMemoryUtilization: 0.9, MaxReplicas: 4},
		Pool:  pool, MaxModelLen: 8192, MinReplicas: 0, QueueDepthTarget: 5,
		Repository: "vllm/vllm-openai", Tag: "v0.11.0",
		APIKeySecret: "gpu-node-pools-api-key", WeightsClaim: "weights-llama3-70b", BandwidthMBps: 500,
		PrometheusAddress:    "http://prometheus-operated.monitoring.svc:9090",
		ServiceMonitorLabels: map[string]string{"release": "kube-prometheus-stack"},
		RuntimeClass:         "nvidia", PriorityClass: "gpu-serving",
	}
	if misfits := serving.Fit(e.Model, pool); len(misfits) != 0 {
		t.Fatalf("the test model must fit: %+v", misfits)
	}
	archive := filepath.Join(pulumitest.SharedDir(t), "charts", "vllm-stack-0.1.12.tgz")
	objs := pulumitest.RenderChart(t, archive, "vllm-llama3-70b", "models", serving.VLLMValues(e), false)
	byKind := map[string][]map[string]any{}
	for _, o := range objs {
		byKind[o["kind"].(string)] = append(byKind[o["kind"].(string)], o)
	}
	if len(byKind["Deployment"]) != 1 {
		t.Fatalf("want only the engine Deployment (router off), got %d", len(byKind["Deployment"]))
	}
	pod := get(byKind["Deployment"][0], "spec", "template", "spec")
	c := get(pod, "containers").([]any)[0]
	for _, k := range []string{"requests", "limits"} {
		if got := fmt.Sprint(get(c, "resources", k, "nvidia.com/gpu")); got != "4" {
			t.Errorf("resources.%s nvidia.com/gpu = %s, want the tensor-parallel size 4", k, got)
		}
	}
	if s := fmt.Sprint(get(pod, "tolerations")); !strings.Contains(s, "nvidia.com/gpu") {
		t.Errorf("tolerations %s", s)
	}
	if s := fmt.Sprint(get(pod, "affinity", "nodeAffinity")); !strings.Contains(s, "gpu.natron.cloud/pool") || !strings.Contains(s, "infer") {
		t.Errorf("node affinity %s does not pin the pool", s)
	}
	budget := serving.StartupBudgetSeconds(140, 500)
	if get(c, "startupProbe", "httpGet", "path") != "/health" ||
		fmt.Sprint(get(c, "startupProbe", "failureThreshold")) != fmt.Sprint((budget+9)/10) ||
		get(c, "readinessProbe", "httpGet", "path") != "/health" {
		t.Errorf("probes: startup %v readiness %v, want /health and a %ds budget", get(c, "startupProbe"), get(c, "readinessProbe"), budget)
	}
	args := fmt.Sprint(get(c, "args"), get(c, "command"))
	for _, a := range []string{"/models/llama3-70b", "--tensor-parallel-size 4", "--max-model-len 8192"} {
		if !strings.Contains(args, a) {
			t.Errorf("vLLM arguments %s lack %s", args, a)
		}
	}
	// vLLM takes both spellings; the chart writes the underscore one
	if !strings.Contains(args, "--gpu_memory_utilization 0.9") && !strings.Contains(args, "--gpu-memory-utilization 0.9") {
		t.Errorf("vLLM arguments %s lack the GPU memory utilization", args)
	}
	if s := fmt.Sprint(get(c, "volumeMounts")); !strings.Contains(s, "mountPath:/models") || !strings.Contains(s, "readOnly:true") {
		t.Errorf("weights mount %s", s)
	}
	if s := fmt.Sprint(get(c, "env")); !strings.Contains(s, "gpu-node-pools-api-key") {
		t.Errorf("API key not taken from its Secret: %s", s)
	}
	if len(byKind["ScaledObject"]) != 1 || !strings.Contains(fmt.Sprint(get(byKind["ScaledObject"][0], "spec", "triggers")), "vllm:num_requests_waiting") {
		t.Errorf("ScaledObject on queue depth: %v", byKind["ScaledObject"])
	}
	if len(byKind["ServiceMonitor"]) == 0 {
		t.Error("no ServiceMonitor for the engine")
	}
}
