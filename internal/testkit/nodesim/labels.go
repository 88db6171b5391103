// Package nodesim builds the Nodes a real cluster would have once its GPU
// stack has run: labels from our pools, node-feature-discovery, the GPU
// operator and GPU feature discovery (each rule encoded from its upstream
// source, cited), taints, and capacity from the catalog.
package nodesim

import (
	"maps"
	"slices"
	"strings"

	"github.com/natron/gpu-node-pools/internal/catalog"
)

// PCIDevice is one PCI function of a host, as NFD reads it from sysfs.
type PCIDevice struct{ Class, Vendor string }

// HostDevices are the PCI functions of a bare-metal host of a profile:
// its GPUs (NVIDIA's data center GPUs are 3D controllers, class 0302,
// vendor 10de), its NICs (Ethernet, class 0200) and its NVMe drives (0108).
func HostDevices(sku catalog.SKU) []PCIDevice {
	out := []PCIDevice{{"0200", "15b3"}, {"0200", "15b3"}, {"0108", "144d"}}
	for range sku.GPUs {
		out = append(out, PCIDevice{"0302", "10de"})
	}
	return out
}

// NFDConfig is the part of nfd-worker's config the pci source reads.
type NFDConfig struct {
	Sources struct {
		PCI struct {
			DeviceClassWhitelist []string `json:"deviceClassWhitelist"`
			DeviceLabelFields    []string `json:"deviceLabelFields"`
		} `json:"pci"`
	} `json:"sources"`
}

// NFDDefaultConfig is NFD's own pci default (source/pci/pci.go,
// newDefaultConfig, at v0.19.0): what a cluster's NFD runs with untouched.
func NFDDefaultConfig() NFDConfig {
	var c NFDConfig
	c.Sources.PCI.DeviceClassWhitelist = []string{"03", "0b40", "12"}
	c.Sources.PCI.DeviceLabelFields = []string{"class", "vendor"}
	return c
}

// NFDPCILabels are the labels NFD's pci source gives a host (GetLabels in
// source/pci/pci.go at v0.19.0): per device whose class starts with a
// whitelisted class, feature.node.kubernetes.io/pci-<fields>.present=true,
// the fields being the configured ones in the order class, vendor, device,
// subsystem_vendor, subsystem_device (mandatoryDevAttrs, utils.go), joined
// by "_" (nfd-worker.go prefixes the namespace and "pci-").
func NFDPCILabels(c NFDConfig, devices []PCIDevice) map[string]string {
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
			if strings.HasPrefix(d.Class, strings.ToLower(white)) {
				var parts []string
				for _, f := range fields {
					parts = append(parts, map[string]string{"class": d.Class, "vendor": d.Vendor}[f])
				}
				out["feature.node.kubernetes.io/pci-"+strings.Join(parts, "_")+".present"] = "true"
				break
			}
		}
	}
	return out
}

// OperatorLabels are the labels the GPU operator (v26.7.0) leaves on a
// node (controllers/nodelabeling_controller.go, reconcileCommonGPULabel
// and updateGPUStateLabels; controllers/state_manager.go, gpuNodeLabels
// and gpuStateLabels): nvidia.com/gpu.present follows NFD's GPU PCI labels,
// set to true with them and to false without them, whatever was there; a
// GPU node of the default container workload gets the operands' deploy
// labels, a node without GPUs loses them.
func OperatorLabels(labels map[string]string) map[string]string {
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

// OperandSelectors are the node selectors of the operator's operand
// DaemonSets (assets/state-*/0500_daemonset.yaml,
// gpu-feature-discovery/0500_daemonset.yaml and
// state-dcgm-exporter/0800_daemonset.yaml at v26.7.0).
var OperandSelectors = map[string]string{
	"gpu-feature-discovery":              "nvidia.com/gpu.deploy.gpu-feature-discovery",
	"nvidia-driver-daemonset":            "nvidia.com/gpu.deploy.driver",
	"nvidia-container-toolkit-daemonset": "nvidia.com/gpu.deploy.container-toolkit",
	"nvidia-device-plugin-daemonset":     "nvidia.com/gpu.deploy.device-plugin",
	"nvidia-dcgm-exporter":               "nvidia.com/gpu.deploy.dcgm-exporter",
	"nvidia-operator-validator":          "nvidia.com/gpu.deploy.operator-validator",
}
