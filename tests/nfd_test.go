package tests

import (
	"maps"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/nodesim"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/program"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// A fresh node of every bare-metal pool ends up a GPU node that the GPU
// operator's driver, toolkit, device plugin, DCGM exporter and validator
// land on: its kubelet labels (the pool's KubeadmConfigTemplate), the
// labels node-feature-discovery gives its PCI devices (the subchart's
// config, rendered from the real chart with the program's values; or, with
// nfd: existing, NFD's own defaults), then the operator's labelling. With
// NFD off, as before, the operator turned nvidia.com/gpu.present false on
// every GPU node and nothing ran there.
func TestBareMetalNodesBecomeGPUNodes(t *testing.T) {
	t.Parallel()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	for _, nfd := range []string{"install", "existing"} {
		t.Run(nfd, func(t *testing.T) {
			t.Parallel()
			c := stacktest.Natron()
			c["renderDir"] = "rendered"
			c["pools"] = []any{
				map[string]any{"name": "infer", "sku": "h100-80gb-x8", "minNodes": 0, "maxNodes": 4},
				map[string]any{"name": "train", "sku": "a100-80gb-x8", "minNodes": 0, "maxNodes": 2, "migProfile": "MIG3g"},
				map[string]any{"name": "small", "sku": "a100-40gb-x8", "minNodes": 0, "maxNodes": 1},
				map[string]any{"name": "notebook", "sku": "a100-80gb-x4", "minNodes": 0, "maxNodes": 2, "timeSlicing": 4},
			}
			if nfd == "existing" {
				c["platform"] = map[string]any{"nfd": "existing"}
			}
			m, err := pulumitest.Run(program.Program, "gpu-node-pools", "test", stacktest.Namespaced(stacktest.Encode(t, c)), nil)
			if err != nil {
				t.Fatal(err)
			}
			op, ok := m.ByName(chartType, "gpu-gpu-operator")
			if !ok {
				t.Fatal("no GPU operator")
			}
			in := plainInputs(op.Inputs)
			values := helmtest.Get(in, "values").(map[string]any)
			installed := helmtest.Get(values, "nfd", "enabled") == true
			if installed != (nfd == "install") {
				t.Fatalf("nfd %s: the operator's chart installs NFD: %v", nfd, installed)
			}
			config := nodesim.NFDDefaultConfig()
			if installed {
				var found bool
				for _, o := range helmtest.RenderChart(t, filepath.Join(charts, "gpu-operator-v26.7.0.tgz"), "gpu-operator", "gpu-platform", values, false) {
					if conf, ok := helmtest.Get(o, "data", "nfd-worker.conf").(string); ok && o["kind"] == "ConfigMap" {
						config = nodesim.NFDConfig{}
						if err := yaml.Unmarshal([]byte(conf), &config); err != nil {
							t.Fatal(err)
						}
						found = true
					}
				}
				if !found {
					t.Fatal("the chart renders no nfd-worker config")
				}
			}
			pools := 0
			for _, r := range m.Resources() {
				if r.Type != kctType {
					continue
				}
				kubelet := kubeletLabels(r)
				sku, err := natron.Profiles.SKU(nil, kubelet["gpu.natron.cloud/sku"])
				if err != nil {
					t.Fatal(err)
				}
				node := maps.Clone(kubelet)
				maps.Copy(node, nodesim.NFDPCILabels(config, nodesim.HostDevices(sku)))
				node = nodesim.OperatorLabels(node)
				pool := kubelet["gpu.natron.cloud/pool"]
				if node["nvidia.com/gpu.present"] != "true" {
					t.Errorf("a %s node (%s) is no GPU node for the operator: nvidia.com/gpu.present=%q, labels %v", pool, sku.Name, node["nvidia.com/gpu.present"], node)
				}
				for ds, key := range nodesim.OperandSelectors {
					if node[key] != "true" {
						t.Errorf("%s does not land on a %s node (%s=%q)", ds, pool, key, node[key])
					}
				}
				pools++
			}
			if pools != 4 {
				t.Fatalf("checked the nodes of %d pools, want 4", pools)
			}
		})
	}
}

// The rule encoded above refuses a node that only says it has GPUs: the
// kubelet labels alone (what the program used to rely on) leave it no GPU
// node.
func TestOperatorRuleNeedsNFDLabels(t *testing.T) {
	t.Parallel()
	node := nodesim.OperatorLabels(map[string]string{"nvidia.com/gpu.present": "true", "gpu.natron.cloud/pool": "infer"})
	if node["nvidia.com/gpu.present"] != "false" || node["nvidia.com/gpu.deploy.device-plugin"] != "" {
		t.Errorf("without NFD's labels the operator must turn the node off, got %v", node)
	}
}
