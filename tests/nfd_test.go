package tests

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks"
)

// pciDevice is one PCI function of a host, as NFD reads it from sysfs.
type pciDevice struct{ class, vendor string }

// hostDevices are the PCI functions of a bare-metal host of a profile:
// its GPUs (NVIDIA's data center GPUs are 3D controllers, class 0302,
// vendor 10de), its NICs (Ethernet, class 0200) and its NVMe drives (0108).
func hostDevices(sku catalog.SKU) []pciDevice {
	out := []pciDevice{{"0200", "15b3"}, {"0200", "15b3"}, {"0108", "144d"}}
	for range sku.GPUs {
		out = append(out, pciDevice{"0302", "10de"})
	}
	return out
}

// nfdConfig is the part of nfd-worker's config the pci source reads.
type nfdConfig struct {
	Sources struct {
		PCI struct {
			DeviceClassWhitelist []string `json:"deviceClassWhitelist"`
			DeviceLabelFields    []string `json:"deviceLabelFields"`
		} `json:"pci"`
	} `json:"sources"`
}

// nfdDefaultConfig is NFD's own pci default (source/pci/pci.go,
// newDefaultConfig, at v0.19.0): what a cluster's NFD runs with untouched.
func nfdDefaultConfig() nfdConfig {
	var c nfdConfig
	c.Sources.PCI.DeviceClassWhitelist = []string{"03", "0b40", "12"}
	c.Sources.PCI.DeviceLabelFields = []string{"class", "vendor"}
	return c
}

// nfdPCILabels are the labels NFD's pci source gives a host (GetLabels in
// source/pci/pci.go at v0.19.0): per device whose class starts with a
// whitelisted class, feature.node.kubernetes.io/pci-<fields>.present=true,
// the fields being the configured ones in the order class, vendor, device,
// subsystem_vendor, subsystem_device (mandatoryDevAttrs, utils.go), joined
// by "_" (nfd-worker.go prefixes the namespace and "pci-").
func nfdPCILabels(c nfdConfig, devices []pciDevice) map[string]string {
	var fields []string
	for _, f := range []string{"class", "vendor", "device", "subsystem_vendor", "subsystem_device"} {
		if slices.Contains(c.Sources.PCI.DeviceLabelFields, f) {
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		fields = []string{"class", "vendor"}
	}
	out := map[string]string{}
	for _, d := range devices {
		for _, white := range c.Sources.PCI.DeviceClassWhitelist {
			if strings.HasPrefix(d.class, strings.ToLower(white)) {
				var parts []string
				for _, f := range fields {
					parts = append(parts, map[string]string{"class": d.class, "vendor": d.vendor}[f])
				}
				out["feature.node.kubernetes.io/pci-"+strings.Join(parts, "_")+".present"] = "true"
				break
			}
		}
	}
	return out
}

// operatorLabels are the labels the GPU operator (v26.7.0) leaves on a
// node (controllers/nodelabeling_controller.go, reconcileCommonGPULabel
// and updateGPUStateLabels; controllers/state_manager.go, gpuNodeLabels
// and gpuStateLabels): nvidia.com/gpu.present follows NFD's GPU PCI labels,
// set to true with them and to false without them, whatever was there; a
// GPU node of the default container workload gets the operands' deploy
// labels, a node without GPUs loses them.
func operatorLabels(labels map[string]string) map[string]string {
	out := maps.Clone(labels)
	gpu := false
	for _, k := range []string{"pci-10de", "pci-0302_10de", "pci-0300_10de"} {
		gpu = gpu || labels["feature.node.kubernetes.io/"+k+".present"] == "true"
	}
	deploy := []string{"driver", "gpu-feature-discovery", "container-toolkit", "device-plugin", "dcgm", "dcgm-exporter",
		"node-status-exporter", "operator-validator", "client"}
	switch {
	case gpu:
		out["nvidia.com/gpu.present"] = "true"
		for _, d := range deploy {
			out["nvidia.com/gpu.deploy."+d] = "true"
		}
	case labels["nvidia.com/gpu.present"] == "true":
		out["nvidia.com/gpu.present"] = "false"
		for _, d := range deploy {
			delete(out, "nvidia.com/gpu.deploy."+d)
		}
	}
	return out
}

// operandSelectors are the node selectors of the operator's operand
// DaemonSets (assets/state-*/0500_daemonset.yaml and
// state-dcgm-exporter/0800_daemonset.yaml at v26.7.0).
var operandSelectors = map[string]string{
	"nvidia-driver-daemonset":            "nvidia.com/gpu.deploy.driver",
	"nvidia-container-toolkit-daemonset": "nvidia.com/gpu.deploy.container-toolkit",
	"nvidia-device-plugin-daemonset":     "nvidia.com/gpu.deploy.device-plugin",
	"nvidia-dcgm-exporter":               "nvidia.com/gpu.deploy.dcgm-exporter",
	"nvidia-operator-validator":          "nvidia.com/gpu.deploy.operator-validator",
}

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
			m, err := pulumitest.Run(stacks.Program, "gpu-node-pools", "test", stacktest.Namespaced(stacktest.Encode(t, c)), nil)
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
			config := nfdDefaultConfig()
			if installed {
				var found bool
				for _, o := range helmtest.RenderChart(t, filepath.Join(charts, "gpu-operator-v26.7.0.tgz"), "gpu-operator", "gpu-platform", values, false) {
					if conf, ok := helmtest.Get(o, "data", "nfd-worker.conf").(string); ok && o["kind"] == "ConfigMap" {
						config = nfdConfig{}
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
				sku, err := catalog.BareMetal.SKU(nil, kubelet["gpu.natron.cloud/sku"])
				if err != nil {
					t.Fatal(err)
				}
				node := maps.Clone(kubelet)
				maps.Copy(node, nfdPCILabels(config, hostDevices(sku)))
				node = operatorLabels(node)
				pool := kubelet["gpu.natron.cloud/pool"]
				if node["nvidia.com/gpu.present"] != "true" {
					t.Errorf("a %s node (%s) is no GPU node for the operator: nvidia.com/gpu.present=%q, labels %v", pool, sku.Name, node["nvidia.com/gpu.present"], node)
				}
				for ds, key := range operandSelectors {
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
	node := operatorLabels(map[string]string{"nvidia.com/gpu.present": "true", "gpu.natron.cloud/pool": "infer"})
	if node["nvidia.com/gpu.present"] != "false" || node["nvidia.com/gpu.deploy.device-plugin"] != "" {
		t.Errorf("without NFD's labels the operator must turn the node off, got %v", node)
	}
}
