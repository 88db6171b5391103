package serving_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/components/gpupool"
	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

var get = helmtest.Get

// The real vllm-stack chart renders a 70B model, sharded over 4 H100s of a
// spot-free bare-metal pool, the way the issue asks: GPU requests, pool
// tolerations and affinity, load-aware probes, the read-only weights cache,
// the API key from its Secret, queue-depth scaling and a ServiceMonitor.
func TestVLLMStackRendersTheEngine(t *testing.T) {
	t.Parallel()
	// a 70B model on an 8-GPU H100 AKS pool, as a production stack serves it
	m := serving.ModelSpec{
		Name: "llama3-70b", Pool: "h100x8", Source: "az://models/meta-llama/Meta-Llama-3-70B-Instruct",
		ParametersB: 70, Dtype: "bfloat16", TensorParallel: 4, MaxModelLen: 8192, GPUMemoryUtilization: 0.9,
		MinReplicas: 1, MaxReplicas: 4, QueueDepthTarget: 3, Hostname: "llama70b.acme.example",
	}
	pool := pooltest.Resolved(t, catalog.Azure, gpupool.Spec{Name: m.Pool, SKU: "Standard_ND96isr_H100_v5", MaxNodes: 2}).Facts
	o := serving.Options{}.Defaults("azurefile-csi-premium")
	e := serving.NewEngine(m, pool, o, map[string]string{"release": "kube-prometheus-stack"}, "")
	if misfits := serving.Fit(nil, e.Model, pool); len(misfits) != 0 {
		t.Fatalf("the test model must fit: %+v", misfits)
	}
	archive := filepath.Join(pulumitest.SharedDir(t), "charts", "vllm-stack-0.1.12.tgz")
	objs := helmtest.RenderChart(t, archive, "vllm-llama3-70b", "models", serving.VLLMValues(e), false)
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
	if s := fmt.Sprint(get(pod, "affinity", "nodeAffinity")); !strings.Contains(s, "gpu.natron.cloud/pool") || !strings.Contains(s, m.Pool) {
		t.Errorf("node affinity %s does not pin the pool", s)
	}
	budget := serving.StartupBudgetSeconds(140, o.BandwidthMBps)
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
	if len(byKind["ScaledObject"]) != 0 {
		t.Errorf("the chart's ScaledObject is off; the program writes its own: %v", byKind["ScaledObject"])
	}
	// Our ScaledObject targets the Deployment the chart rendered.
	so := serving.ScaledObject("models", e)
	if get(so, "spec", "scaleTargetRef", "name") != get(byKind["Deployment"][0], "metadata", "name") {
		t.Errorf("ScaledObject targets %v, the chart rendered %v", get(so, "spec", "scaleTargetRef", "name"), get(byKind["Deployment"][0], "metadata", "name"))
	}
	if !strings.Contains(fmt.Sprint(get(so, "spec", "triggers")), "vllm:num_requests_waiting") || get(so, "spec", "maxReplicaCount") != 4 {
		t.Errorf("ScaledObject on queue depth: %v", so)
	}
	if len(byKind["ServiceMonitor"]) != 0 {
		t.Error("the chart's ServiceMonitor is off: ours renders offline")
	}
	// Our ServiceMonitor must find the engine Service the chart rendered.
	sm := serving.EngineServiceMonitor("models", e)
	var svc map[string]any
	for _, s := range byKind["Service"] {
		if get(s, "metadata", "name") == serving.ServiceName("llama3-70b") {
			svc = s
		}
	}
	if svc == nil {
		t.Fatalf("no Service %s rendered", serving.ServiceName("llama3-70b"))
	}
	labels, _ := get(svc, "metadata", "labels").(map[string]any)
	for k, v := range get(sm, "spec", "selector", "matchLabels").(map[string]any) {
		if labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%v, the Service has %v", k, v, labels[k])
		}
	}
	if !strings.Contains(fmt.Sprint(get(svc, "spec", "ports")), "service-port") {
		t.Errorf("Service ports %v lack service-port", get(svc, "spec", "ports"))
	}
	// The NetworkPolicy must select the engine pods.
	podLabels, _ := get(byKind["Deployment"][0], "spec", "template", "metadata", "labels").(map[string]any)
	np := serving.NetworkPolicy("models", "llama3-70b", serving.Options{}.Defaults("cephfs"))
	for k, v := range get(np, "spec", "podSelector", "matchLabels").(map[string]any) {
		if podLabels[k] != v {
			t.Errorf("NetworkPolicy selects %s=%v, engine pods have %v", k, v, podLabels[k])
		}
	}
	if s := fmt.Sprint(get(pod, "initContainers")); !strings.Contains(s, "wait-for-weights") || !strings.Contains(s, "/models") {
		t.Errorf("init container waiting for the weights: %s", s)
	}
}

// The KEDA chart the program installs renders offline at its pinned version
// and brings the ScaledObject CRD the engines' autoscaling needs; the
// images it pulls are the ones its chart lists.
func TestKEDAChartRenders(t *testing.T) {
	t.Parallel()
	archive := serving.KEDAChart.Archive(filepath.Join(pulumitest.SharedDir(t), "charts"))
	objs := helmtest.RenderChart(t, archive, "keda", "keda", map[string]any{}, true)
	var operator, crd bool
	for _, o := range objs {
		name := fmt.Sprint(get(o, "metadata", "name"))
		operator = operator || (o["kind"] == "Deployment" && name == "keda-operator")
		crd = crd || (o["kind"] == "CustomResourceDefinition" && name == "scaledobjects.keda.sh")
	}
	if !operator || !crd {
		t.Errorf("keda chart: operator %v, ScaledObject CRD %v", operator, crd)
	}
	pulled := helmtest.PodImages(objs)
	for _, img := range pulled {
		if !policy.Allows(serving.KEDAChart.Images, img) {
			t.Errorf("keda pulls %s, which its image list %v does not cover", img, serving.KEDAChart.Images)
		}
	}
	for _, listed := range serving.KEDAChart.Images {
		if !slices.ContainsFunc(pulled, func(img string) bool { return policy.Allows([]string{listed}, img) }) {
			t.Errorf("keda lists %s, which it does not pull (pulls %v)", listed, pulled)
		}
	}
}
