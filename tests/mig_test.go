package tests

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks"
)

// advertised is what the NVIDIA device plugin (v0.20.0) advertises on a
// node of gpus GPUs, each split into perGPU MIG instances named instance
// (perGPU 0: no MIG), under a MIG strategy and with time-slicing replicas:
//   - none: every GPU as nvidia.com/gpu, MIG-enabled or not
//     (internal/rm/device_map.go, buildGPUDeviceMap skips MIG-enabled GPUs
//     only for other strategies);
//   - single: every MIG instance as nvidia.com/gpu
//     (internal/rm/rm.go, AddDefaultResourcesToConfig: AddMIGResource("*", "gpu"));
//   - mixed: each instance as nvidia.com/mig-<profile>, such as
//     nvidia.com/mig-3g.40gb (the same function, "mig-"+p.String());
//
// time-slicing multiplies the count of the shared resource
// (api/config/v1/sharing.go).
func advertised(strategy string, gpus, perGPU int, instance string, replicas int) map[string]int {
	count, name := gpus, "nvidia.com/gpu"
	if perGPU > 0 && strategy != "none" {
		count = gpus * perGPU
		if strategy == "mixed" {
			name = "nvidia.com/mig-" + instance
		}
	}
	if replicas > 1 {
		count *= replicas
	}
	return map[string]int{name: count}
}

// pluginStrategy is the MIG strategy the device plugin runs with on a
// node: MIG_STRATEGY from the environment (the chart's migStrategy value,
// or the GPU operator's ClusterPolicy mig.strategy) wins over the config
// file (api/config/v1/config.go, NewConfig); the config file is the
// config map entry the node's nvidia.com/device-plugin.config label names,
// else the default entry (the config-manager); without either, none.
func pluginStrategy(env string, configs map[string]string, defaultEntry string, nodeLabels map[string]string) (string, int) {
	entry := defaultEntry
	if l := nodeLabels["nvidia.com/device-plugin.config"]; l != "" {
		entry = l
	}
	var c struct {
		Flags struct {
			MigStrategy string `json:"migStrategy"`
		} `json:"flags"`
		Sharing struct {
			TimeSlicing struct {
				Resources []struct {
					Replicas int `json:"replicas"`
				} `json:"resources"`
			} `json:"timeSlicing"`
		} `json:"sharing"`
	}
	if configs != nil {
		_ = yaml.Unmarshal([]byte(configs[entry]), &c)
	}
	strategy, replicas := c.Flags.MigStrategy, 0
	if len(c.Sharing.TimeSlicing.Resources) > 0 {
		replicas = c.Sharing.TimeSlicing.Resources[0].Replicas
	}
	if env != "" {
		strategy = env
	}
	if strategy == "" {
		strategy = "none"
	}
	return strategy, replicas
}

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
			m, err := pulumitest.Run(stacks.Program, "gpu-node-pools", "test", migStack(t, target), nil)
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
				section := map[string]catalog.Section{"aks": catalog.Azure, "natron": catalog.BareMetal}[target]
				s, err := section.SKU(nil, sku)
				if err != nil {
					t.Fatal(err)
				}
				perGPU, instance := 0, ""
				if p := catalog.MIGProfile(map[string]string{"mig3": "MIG3g", "mig1": "MIG1g"}[pool]); p != "" {
					slice, _ := s.GPU.Slice(p)
					perGPU, instance = slice.PerGPU, slice.Name
				}
				strategy, replicas := pluginStrategy(env, configs, defaultEntry, labels)
				nodes[pool] = advertised(strategy, s.GPUs, perGPU, instance, replicas)
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
