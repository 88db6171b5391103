package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/nodesim"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/program"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// migStack is a stack whose MIG pools use different profiles, with a
// model and a batch job on them, on either target.
func migStack(t *testing.T, target string) map[string]string {
	t.Helper()
	c := stacktest.Natron()
	c["renderDir"] = "rendered"
	c["pools"] = []any{
		map[string]any{"name": "mig3", "sku": "a100-80gb-x8", "minNodes": 0, "maxNodes": 2, "migProfile": "MIG3g"},
		map[string]any{"name": "mig1", "sku": "a100-80gb-x8", "minNodes": 0, "maxNodes": 2, "migProfile": "MIG1g"},
		map[string]any{"name": "whole", "sku": "h100-80gb-x8", "minNodes": 0, "maxNodes": 2},
		map[string]any{"name": "shared", "sku": "a100-80gb-x4", "minNodes": 0, "maxNodes": 2, "timeSlicing": 4},
	}
	source := "s3://models/m"
	if target == "aks" {
		c = stacktest.AKS()
		c["pools"] = []any{
			map[string]any{"name": "mig3", "sku": "Standard_ND96amsr_A100_v4", "minNodes": 0, "maxNodes": 2, "migProfile": "MIG3g"},
			map[string]any{"name": "mig1", "sku": "Standard_ND96amsr_A100_v4", "minNodes": 0, "maxNodes": 2, "migProfile": "MIG1g"},
			map[string]any{"name": "whole", "sku": "Standard_NC24ads_A100_v4", "minNodes": 0, "maxNodes": 2},
			map[string]any{"name": "shared", "sku": "Standard_NC24ads_A100_v4", "minNodes": 0, "maxNodes": 2, "timeSlicing": 4},
		}
		source = "az://models/m"
	}
	c = stacktest.WithServing(c)
	model := func(name, pool string, params float64, quantization string) map[string]any {
		m := map[string]any{"name": name, "pool": pool, "source": source, "parametersB": params, "dtype": "auto",
			"tensorParallel": 1, "maxModelLen": 4096, "gpuMemoryUtilization": 0.9, "minReplicas": 0, "maxReplicas": 2, "queueDepthTarget": 5}
		if quantization != "" {
			m["quantization"] = quantization
		}
		return m
	}
	c["models"] = []any{model("on-mig3", "mig3", 8, ""), model("on-mig1", "mig1", 3, "awq"), model("on-whole", "whole", 8, "")}
	c["batchJobs"] = []any{map[string]any{"name": "embed", "pool": "mig1", "image": "registry.example/embed:1", "schedule": "0 2 * * *", "gpus": 1}}
	return stacktest.Namespaced(stacktest.Encode(t, c))
}

// Every pod requests the resource its pool's nodes advertise, and as many
// as a node has, with MIG pools of two profiles beside whole-GPU and
// time-sliced pools, on both targets; the Cluster API autoscaler's
// template node (bare metal) offers the same resource in the same count
// (capacity annotations, clusterapi_unstructured.go InstanceCapacity at
// cluster-autoscaler-1.36.1: resource named by gpu-type, gpu-count of it).
func TestPodsRequestWhatTheirNodesAdvertise(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"natron", "aks"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			m, err := pulumitest.Run(program.Program, "gpu-node-pools", "test", migStack(t, target), nil)
			if err != nil {
				t.Fatal(err)
			}
			// the device plugin's configuration, as registered
			var env, defaultEntry string
			var configs map[string]string
			for _, r := range m.Resources() {
				in := plainInputs(r.Inputs)
				switch r.Name {
				case "gpu-gpu-operator":
					env, _ = helmtest.Get(in, "values", "mig", "strategy").(string)
					defaultEntry, _ = helmtest.Get(in, "values", "devicePlugin", "config", "default").(string)
					configs = stringMap(helmtest.Get(in, "values", "devicePlugin", "config", "data"))
				case "gpu-nvidia-device-plugin":
					env, _ = helmtest.Get(in, "values", "migStrategy").(string)
					defaultEntry, _ = helmtest.Get(in, "values", "config", "default").(string)
					configs = stringMap(helmtest.Get(in, "values", "config", "map"))
				}
			}
			// what each pool's nodes advertise
			nodes := map[string]map[string]int{}
			for _, r := range m.Resources() {
				in := plainInputs(r.Inputs)
				var pool string
				var labels map[string]string
				switch r.Type {
				case agentPoolType:
					pool, labels = helmtest.Get(in, "agentPoolName").(string), stringMap(helmtest.Get(in, "nodeLabels"))
				case kctType:
					labels = kubeletLabels(r)
					pool = labels["gpu.natron.cloud/pool"]
				default:
					continue
				}
				sku := labels["gpu.natron.cloud/sku"]
				section := map[string]catalog.Section{"aks": aks.Sizes, "natron": natron.Profiles}[target]
				s, err := section.SKU(nil, sku)
				if err != nil {
					t.Fatal(err)
				}
				perGPU, instance := 0, ""
				if p := catalog.MIGProfile(map[string]string{"mig3": "MIG3g", "mig1": "MIG1g"}[pool]); p != "" {
					slice, _ := s.GPU.Slice(p)
					perGPU, instance = slice.PerGPU, slice.Name
				}
				strategy, replicas := nodesim.PluginStrategy(env, configs, defaultEntry, labels)
				nodes[pool] = nodesim.Advertised(strategy, s.GPUs, perGPU, instance, replicas)
			}
			if len(nodes) != 4 {
				t.Fatalf("found the nodes of %d pools, want 4: %v", len(nodes), nodes)
			}
			checked := 0
			request := func(what, pool, resource string, count int) {
				t.Helper()
				have := nodes[pool]
				if have[resource] < count {
					t.Errorf("%s requests %d %s on pool %s, whose nodes advertise %v", what, count, resource, pool, have)
				}
				checked++
			}
			for _, r := range m.Resources() {
				in := plainInputs(r.Inputs)
				switch {
				case r.Type == chartType && strings.HasPrefix(r.Name, "serving-on-"):
					spec := helmtest.Get(in, "values", "servingEngineSpec", "modelSpec").([]any)[0]
					pool := strings.TrimPrefix(r.Name, "serving-on-")
					request("model "+pool, pool, helmtest.Get(spec, "requestGPUType").(string), int(helmtest.Get(spec, "requestGPU").(float64)))
				case r.Type == "kubernetes:batch/v1:CronJob":
					c := helmtest.Get(in, "spec", "jobTemplate", "spec", "template", "spec", "containers").([]any)[0]
					for res, n := range helmtest.Get(c, "resources", "limits").(map[string]any) {
						if strings.HasPrefix(res, "nvidia.com/") {
							var count int
							fmt.Sscan(fmt.Sprint(n), &count)
							request("batch job", "mig1", res, count)
						}
					}
				case r.Type == mdType:
					ann := stringMap(helmtest.Get(in, "metadata", "annotations"))
					pool := strings.TrimSuffix(r.Name, "-deployment")
					var count int
					fmt.Sscan(ann[capacityPrefix+"gpu-count"], &count)
					if want := nodes[pool]; len(want) != 1 || want[ann[capacityPrefix+"gpu-type"]] != count {
						t.Errorf("the autoscaler's template node of %s offers %d %s, real nodes advertise %v", pool, count, ann[capacityPrefix+"gpu-type"], want)
					}
					checked++
				}
			}
			if want := map[string]int{"natron": 3 + 1 + 4, "aks": 3 + 1}[target]; checked != want {
				t.Fatalf("checked %d requests and template nodes, want %d", checked, want)
			}
		})
	}
}

func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := map[string]string{}
	for k, e := range m {
		out[k] = fmt.Sprint(e)
	}
	return out
}

// kubeletLabels are the node labels a KubeadmConfigTemplate registers its
// nodes with (kubelet's --node-labels).
func kubeletLabels(r pulumitest.Resource) map[string]string {
	args := helmtest.Get(plainInputs(r.Inputs), "spec", "template", "spec", "joinConfiguration", "nodeRegistration", "kubeletExtraArgs").([]any)
	labels := map[string]string{}
	for _, kv := range strings.Split(helmtest.Get(args[0], "value").(string), ",") {
		k, v, _ := strings.Cut(kv, "=")
		labels[k] = v
	}
	return labels
}
