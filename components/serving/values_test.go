package serving_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/plain"
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
		MinReplicas: new(1), MaxReplicas: 4, QueueDepthTarget: 3, Hostname: "llama70b.acme.example",
	}
	pool := pooltest.Resolved(t, pooltest.AKS, gpupool.Spec{Name: m.Pool, SKU: "Standard_ND96isr_H100_v5", MaxNodes: 2}).Facts
	o := serving.Options{}.Defaults("azurefile-csi-premium", serving.Cilium)
	e := serving.NewEngine(m, pool, o, map[string]string{"release": "kube-prometheus-stack"}, "")
	if misfits := fit.Fit(nil, e.Model, pool); len(misfits) != 0 {
		t.Fatalf("the test model must fit: %+v", misfits)
	}
	objs := renderEngine(t, e)
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
	budget := fit.StartupBudgetSeconds(140, o.BandwidthMBps)
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
	// One ScaledObject, ours, on the Deployment the chart rendered, on
	// queue depth.
	if len(byKind["ScaledObject"]) != 0 {
		t.Errorf("the chart's ScaledObject is off; the program writes its own: %v", byKind["ScaledObject"])
	}
	so := serving.ScaledObject("models", e)
	if get(so, "spec", "scaleTargetRef", "name") != get(byKind["Deployment"][0], "metadata", "name") {
		t.Errorf("ScaledObject targets %v, the chart rendered %v", get(so, "spec", "scaleTargetRef", "name"), get(byKind["Deployment"][0], "metadata", "name"))
	}
	if !strings.Contains(fmt.Sprint(get(so, "spec", "triggers")), "vllm:num_requests_waiting") || fmt.Sprint(get(so, "spec", "maxReplicaCount")) != "4" {
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
	np := serving.NetworkPolicy("models", e, serving.Options{}.Defaults("cephfs", serving.Cilium))
	for k, v := range get(np, "spec", "podSelector", "matchLabels").(map[string]any) {
		if podLabels[k] != v {
			t.Errorf("NetworkPolicy selects %s=%v, engine pods have %v", k, v, podLabels[k])
		}
	}
	if s := fmt.Sprint(get(pod, "initContainers")); !strings.Contains(s, "wait-for-weights") || !strings.Contains(s, "/models") {
		t.Errorf("init container waiting for the weights: %s", s)
	}
}

// renderEngine renders a model's release from the shared chart archive, as
// the provider would.
func renderEngine(t *testing.T, e serving.Engine) []map[string]any {
	t.Helper()
	rel := serving.EngineRelease(helm.Source{}, e, serving.VLLMStackChart)
	return rel.Apply(helmtest.RenderRelease(t, filepath.Join(pulumitest.SharedDir(t), "charts"), rel, "models"))
}

// The KEDA charts the program installs render offline at their pinned
// versions and bring the CRDs the engines' scaling needs (ScaledObject;
// InterceptorRoute for scale-from-zero); the images they pull are the ones
// their charts list, which the registry policy admits.
func TestKEDAChartsRender(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		chart      helm.Chart
		deployment string
		crd        string
	}{
		{serving.KEDAChart, "keda-operator", "scaledobjects.keda.sh"},
		{serving.HTTPAddOnChart, "keda-add-ons-http-interceptor", "interceptorroutes.http.keda.sh"},
	} {
		t.Run(tc.chart.Name, func(t *testing.T) {
			t.Parallel()
			archive := tc.chart.Archive(filepath.Join(pulumitest.SharedDir(t), "charts"))
			objs := helmtest.RenderChart(t, archive, tc.chart.Name, serving.KEDANamespace, map[string]any{}, true)
			var deployment, crd bool
			for _, o := range objs {
				name := fmt.Sprint(get(o, "metadata", "name"))
				deployment = deployment || (o["kind"] == "Deployment" && name == tc.deployment)
				crd = crd || (o["kind"] == "CustomResourceDefinition" && name == tc.crd)
			}
			if !deployment || !crd {
				t.Errorf("%s: Deployment %s %v, CRD %s %v", tc.chart.Name, tc.deployment, deployment, tc.crd, crd)
			}
			pulled := helmtest.PodImages(objs)
			for _, img := range pulled {
				if !policy.Allows(tc.chart.Images, img) {
					t.Errorf("%s pulls %s, which its image list %v does not cover", tc.chart.Name, img, tc.chart.Images)
				}
			}
			for _, listed := range tc.chart.Images {
				if !slices.ContainsFunc(pulled, func(img string) bool { return policy.Allows([]string{listed}, img) }) {
					t.Errorf("%s lists %s, which it does not pull (pulls %v)", tc.chart.Name, listed, pulled)
				}
			}
		})
	}
}

// The add-on's Services are where the program's triggers and wake
// Services point.
func TestHTTPAddOnServices(t *testing.T) {
	t.Parallel()
	archive := serving.HTTPAddOnChart.Archive(filepath.Join(pulumitest.SharedDir(t), "charts"))
	ports := map[string]string{}
	for _, o := range helmtest.RenderChart(t, archive, "keda-add-ons-http", serving.KEDANamespace, map[string]any{}, false) {
		if o["kind"] == "Service" {
			for _, p := range get(o, "spec", "ports").([]any) {
				ports[fmt.Sprintf("%v.%v:%v", get(o, "metadata", "name"), get(o, "metadata", "namespace"), get(p, "port"))] = fmt.Sprint(get(p, "name"))
			}
		}
	}
	if _, ok := ports[serving.ScalerAddress]; !ok {
		t.Errorf("no add-on Service answers at %s: %v", serving.ScalerAddress, ports)
	}
	proxy := strings.TrimSuffix(serving.InterceptorHost, ".svc.cluster.local") + fmt.Sprintf(":%d", serving.InterceptorPort)
	if ports[proxy] != "proxy" {
		t.Errorf("no interceptor proxy at %s: %v", proxy, ports)
	}
}

// The engine Deployment as the chart renders it for a model that scales
// from zero and one that keeps replicas: no spec.replicas once the chart's
// transform ran (KEDA owns them; a value there would reset them on every
// chart change), none of the chart's sample labels in the immutable
// selector, one ScaledObject (ours), and an await Pulumi can keep: skipped
// at zero replicas, else the model's cold-start budget.
func TestEngineDeploymentLeavesScalingToKEDA(t *testing.T) {
	t.Parallel()
	pool := pooltest.Resolved(t, pooltest.Natron, gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 2}).Facts
	o := serving.Options{}.Defaults("cephfs", serving.Cilium)
	for _, minReplicas := range []int{0, 2} {
		t.Run(fmt.Sprint("min", minReplicas), func(t *testing.T) {
			t.Parallel()
			m := serving.ModelSpec{Name: "llama3-70b", Pool: "infer", Source: "s3://m/l", ParametersB: 70, Dtype: "auto", Quantization: "fp8",
				TensorParallel: 2, MaxModelLen: 8192, GPUMemoryUtilization: 0.9, MinReplicas: &minReplicas, MaxReplicas: 4, QueueDepthTarget: 5}
			e := serving.NewEngine(m, pool, o, nil, "nvidia")
			var deploy map[string]any
			for _, obj := range renderEngine(t, e) {
				switch obj["kind"] {
				case "Deployment":
					deploy = obj
				case "ScaledObject":
					t.Errorf("the chart renders a ScaledObject of its own: KEDA refuses a second one on the engine")
				}
			}
			if deploy == nil {
				t.Fatal("no engine Deployment rendered")
			}
			so := serving.ScaledObject("models", e)
			if get(so, "spec", "scaleTargetRef", "name") != get(deploy, "metadata", "name") {
				t.Errorf("ScaledObject targets %v, the chart rendered %v", get(so, "spec", "scaleTargetRef", "name"), get(deploy, "metadata", "name"))
			}
			// The chart writes replicas; the chart's transform takes them
			// out of what the provider applies.
			if _, set := get(deploy, "spec").(map[string]any)["replicas"]; !set {
				t.Error("the chart no longer writes spec.replicas: drop LeaveReplicasToKEDA")
			}
			res := serving.LeaveReplicasToKEDA(context.Background(), &pulumi.ResourceTransformArgs{Type: "kubernetes:apps/v1:Deployment", Props: plain.Map(deploy)})
			if res == nil {
				t.Fatal("the transform leaves the engine Deployment's replicas")
			}
			if r, set := res.Props["spec"].(pulumi.Map)["replicas"]; set {
				t.Errorf("the engine Deployment sets replicas %v over KEDA's", r)
			}
			if res.Props["spec"].(pulumi.Map)["template"] == nil || res.Props["metadata"] == nil {
				t.Errorf("the transform lost the rest of the Deployment: %v", res.Props)
			}
			for _, path := range [][]string{{"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}, {"metadata", "labels"}} {
				labels := get(deploy, path...).(map[string]any)
				for _, sample := range []string{"environment", "release"} {
					if v, ok := labels[sample]; ok {
						t.Errorf("%s has the chart's sample label %s=%v", strings.Join(path, "."), sample, v)
					}
				}
				if labels["gpu-node-pools/model"] != "llama3-70b" {
					t.Errorf("%s lacks our model label: %v", strings.Join(path, "."), labels)
				}
			}
			ann, _ := get(deploy, "metadata", "annotations").(map[string]any)
			triggers := fmt.Sprint(get(so, "spec", "triggers"))
			if minReplicas == 0 {
				if ann["pulumi.com/skipAwait"] != "true" {
					t.Errorf("a scaled-to-zero engine is awaited: %v", ann)
				}
				if !strings.Contains(triggers, "external-push") || !strings.Contains(triggers, "interceptorRoute:model-llama3-70b") {
					t.Errorf("nothing wakes the engine from zero: triggers %s", triggers)
				}
			} else {
				want := fmt.Sprint(serving.ColdStartSeconds(e))
				if ann["pulumi.com/timeoutSeconds"] != want || ann["pulumi.com/skipAwait"] != nil {
					t.Errorf("await annotations %v, want timeoutSeconds %s", ann, want)
				}
				if budget := fit.StartupBudgetSeconds(e.Weights(), o.BandwidthMBps); serving.ColdStartSeconds(e) <= budget+600 {
					t.Errorf("await %s s does not cover the startup budget %d s plus a node, the image and the download", want, budget)
				}
				if strings.Contains(triggers, "external-push") {
					t.Errorf("an engine that never reaches zero has a wake trigger: %s", triggers)
				}
			}
			if fmt.Sprint(get(so, "spec", "minReplicaCount")) != fmt.Sprint(minReplicas) {
				t.Errorf("minReplicaCount %v, want %d", get(so, "spec", "minReplicaCount"), minReplicas)
			}
		})
	}
}

// An image or argument change rolls out on a pool with no spare GPU: the
// Deployment controller creates surge pods first (they would stay Pending
// on a full pool) and removes old ones only within maxUnavailable
// (kubernetes v1.37 pkg/controller/deployment/rolling.go; the fenceposts
// resolve as util/deployment_util.go ResolveFenceposts: maxSurge rounds
// up, maxUnavailable down, both 0 means one unavailable). The chart's default engine strategy,
// maxSurge 100% and maxUnavailable 0 (vllm-stack 0.1.12 _helpers.tpl
// chart.engineStrategy), needs twice the GPUs and never completes.
func TestEngineRollsOutOnAFullPool(t *testing.T) {
	t.Parallel()
	m := serving.ModelSpec{
		Name: "llama3-70b", Pool: "h100x8", Source: "az://models/meta-llama/Meta-Llama-3-70B-Instruct",
		ParametersB: 70, Dtype: "bfloat16", TensorParallel: 8, MaxModelLen: 8192, GPUMemoryUtilization: 0.9,
		MinReplicas: new(2), MaxReplicas: 2, QueueDepthTarget: 3,
	}
	// two nodes of 8 GPUs, two replicas of 8: the pool is full
	pool := pooltest.Resolved(t, pooltest.AKS, gpupool.Spec{Name: m.Pool, SKU: "Standard_ND96isr_H100_v5", MaxNodes: 2}).Facts
	e := serving.NewEngine(m, pool, serving.Options{}.Defaults("azurefile-csi-premium", serving.Cilium), nil, "")
	var dep map[string]any
	for _, o := range renderEngine(t, e) {
		if o["kind"] == "Deployment" {
			dep = o
		}
	}
	if dep == nil {
		t.Fatal("no engine Deployment")
	}
	replicas := pool.MaxNodes * pool.GPUResourcesPerNode / e.TensorParallel
	scaled := func(key string, roundUp bool) int {
		v := intstr.Parse(fmt.Sprint(get(dep, "spec", "strategy", "rollingUpdate", key)))
		if get(dep, "spec", "strategy", "rollingUpdate", key) == nil {
			v = intstr.FromString("25%") // the API server's default
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(&v, replicas, roundUp)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	surge, unavailable := scaled("maxSurge", true), scaled("maxUnavailable", false)
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	if typ := get(dep, "spec", "strategy", "type"); typ != "RollingUpdate" || surge > 0 || unavailable < 1 {
		t.Errorf("engine strategy %v: on a full pool (%d replicas of %d GPUs) a rollout needs %d spare replicas and may stop %d old ones; it completes only with no surge and at least one unavailable",
			get(dep, "spec", "strategy"), replicas, e.TensorParallel, surge, unavailable)
	}
}
