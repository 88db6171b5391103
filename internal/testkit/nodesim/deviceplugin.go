package nodesim

import (
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/catalog"
)

// Advertised is what the NVIDIA device plugin (v0.20.0) advertises on a
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
func Advertised(strategy string, gpus, perGPU int, instance string, replicas int) map[string]int {
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

// PluginStrategy is the MIG strategy the device plugin runs with on a
// node: MIG_STRATEGY from the environment (the chart's migStrategy value,
// or the GPU operator's ClusterPolicy mig.strategy) wins over the config
// file (api/config/v1/config.go, NewConfig); the config file is the
// config map entry the node's nvidia.com/device-plugin.config label names,
// else the default entry (the config-manager); without either, none.
func PluginStrategy(env string, configs map[string]string, defaultEntry string, nodeLabels map[string]string) (string, int) {
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

// DevicePlugin is the device plugin's configuration as the program
// registers it: MIG_STRATEGY from the environment ("" when unset), the
// config map entries and the default entry.
type DevicePlugin struct {
	Env, Default string
	Configs      map[string]string
}

// Resources are what the device plugin advertises on a node of the pool
// with the node's labels (the config label selects its entry).
func (d DevicePlugin) Resources(sku catalog.SKU, mig catalog.MIGSlice, labels map[string]string) map[string]int {
	strategy, replicas := PluginStrategy(d.Env, d.Configs, d.Default, labels)
	return Advertised(strategy, sku.GPUs, mig.PerGPU, mig.Name, replicas)
}
