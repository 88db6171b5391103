package platform

import (
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
)

// toleration is core/v1 Toleration as Helm values (value omitted for Exists).
type toleration struct {
	Key      string `json:"key"`
	Operator string `json:"operator"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect"`
}

type resourceList struct {
	CPU    string `json:"cpu"`
	Memory string `json:"memory"`
}

type resources struct {
	Requests resourceList `json:"requests"`
	Limits   resourceList `json:"limits"`
}

type relabeling struct {
	SourceLabels []string `json:"sourceLabels"`
	TargetLabel  string   `json:"targetLabel"`
	Action       string   `json:"action"`
}

type serviceMonitor struct {
	Enabled          bool              `json:"enabled"`
	Interval         string            `json:"interval"`
	AdditionalLabels map[string]string `json:"additionalLabels"`
	Relabelings      []relabeling      `json:"relabelings"`
}

// gpuNodeSelector keeps the DaemonSets on GPU pools: every pool sets it.
var gpuNodeSelector = map[string]string{gpupool.LabelGPUPresent: "true"}

// DevicePluginConfigMap names the device plugin config map (GPU operator).
const DevicePluginConfigMap = "gpu-node-pools-device-plugin"

// Tolerations are what every GPU DaemonSet needs: the GPU taint whatever
// its value, and every other taint a pool's pods tolerate (the target's
// spot taint, where a spot pool exists).
func Tolerations(pools []gpupool.Facts) []toleration {
	t := []toleration{{Key: gpupool.GPUTaintKey, Operator: "Exists", Effect: gpupool.GPUTaintEffect}}
	for _, p := range pools {
		for _, s := range p.Tolerations {
			tol := toleration{Key: s.Key, Operator: s.Operator, Value: s.Value, Effect: s.Effect}
			if s.Key != gpupool.GPUTaintKey && !slices.Contains(t, tol) {
				t = append(t, tol)
			}
		}
	}
	return t
}

// MIG strategies of the device plugin (api/config/v1/consts.go in
// NVIDIA/k8s-device-plugin at v0.20.0).
const (
	MIGStrategyNone   = "none"
	MIGStrategySingle = "single"
)

// hasMIG reports whether a pool is split with MIG.
func hasMIG(p gpupool.Facts) bool { return p.MIGProfile != "" }

// devicePluginConfigs is the device plugin's config map: "default" for
// every node without a config of its own, plus the entry each MIG or
// time-slicing pool's nodes select with the nvidia.com/device-plugin.config
// label (the pool's DevicePluginConfig). A MIG pool runs the single
// strategy on its own nodes, whatever the other pools do, so its instances
// are nvidia.com/gpu, the resource its pods request; no global strategy
// (which would turn mixed with two MIG profiles and rename every instance
// nvidia.com/mig-<profile>) is set.
func devicePluginConfigs(pools []gpupool.Facts) map[string]string {
	entry := func(strategy string, replicas int) string {
		c := map[string]any{"version": "v1", "flags": map[string]any{"migStrategy": strategy}}
		if replicas > 1 {
			c["sharing"] = map[string]any{"timeSlicing": map[string]any{
				"resources": []any{map[string]any{"name": gpupool.GPUResourceName, "replicas": replicas}},
			}}
		}
		b, _ := yaml.Marshal(c) // plain maps of strings and ints always marshal
		return string(b)
	}
	out := map[string]string{"default": entry(MIGStrategyNone, 0)}
	for _, p := range pools {
		switch {
		case p.DevicePluginConfig == "":
		case hasMIG(p):
			out[p.DevicePluginConfig] = entry(MIGStrategySingle, 0)
		default:
			out[p.DevicePluginConfig] = entry(MIGStrategyNone, p.TimeSlicing)
		}
	}
	return out
}

func dcgmServiceMonitor(s Spec) serviceMonitor {
	return serviceMonitor{
		Enabled:          true,
		Interval:         s.Monitoring.ScrapeInterval,
		AdditionalLabels: s.Monitoring.ServiceMonitorLabels,
		// The node name makes "GPU node without a working exporter" and
		// per-node panels possible.
		Relabelings: []relabeling{{SourceLabels: []string{"__meta_kubernetes_pod_node_name"}, TargetLabel: "node", Action: "replace"}},
	}
}

type devicePluginConfig struct {
	Map     map[string]string `json:"map"`
	Default string            `json:"default"`
}

type devicePluginValues struct {
	NodeSelector map[string]string   `json:"nodeSelector"`
	Tolerations  []toleration        `json:"tolerations"`
	Resources    resources           `json:"resources"`
	Config       *devicePluginConfig `json:"config,omitempty"`
}

// DevicePluginValues are the nvidia-device-plugin chart's values for a
// validated, defaulted spec.
func DevicePluginValues(s Spec, pools []gpupool.Facts) map[string]any {
	v := devicePluginValues{
		NodeSelector: gpuNodeSelector,
		Tolerations:  Tolerations(pools),
		Resources:    smallAgent,
	}
	// A config map brings the chart's config-manager init and sidecar
	// containers, which the chart gives no resources: use one only when a
	// pool needs its own config (MIG, time-slicing). Without one, the plugin
	// runs its default strategy, none. The chart's migStrategy value stays
	// unset: as MIG_STRATEGY it would override every node's config
	// (api/config/v1/config.go, NewConfig: flags and environment before the
	// config file).
	if slices.ContainsFunc(pools, func(p gpupool.Facts) bool { return p.DevicePluginConfig != "" }) {
		v.Config = &devicePluginConfig{Map: devicePluginConfigs(pools), Default: "default"}
	}
	return helm.Merge(helm.Values(v), s.Values.DevicePlugin)
}

type dcgmExporterValues struct {
	NodeSelector   map[string]string `json:"nodeSelector"`
	Tolerations    []toleration      `json:"tolerations"`
	Resources      resources         `json:"resources"`
	ServiceMonitor enabled           `json:"serviceMonitor"`
	// CustomMetrics replaces the chart's metrics ConfigMap, which its
	// default arguments (-f /etc/dcgm-exporter/default-counters.csv) read.
	CustomMetrics string `json:"customMetrics"`
}

// DCGMExporterValues are the dcgm-exporter chart's values. Its
// ServiceMonitor is the program's own (DCGMExporterServiceMonitor).
func DCGMExporterValues(s Spec, pools []gpupool.Facts) map[string]any {
	return helm.Merge(helm.Values(dcgmExporterValues{
		NodeSelector:   gpuNodeSelector,
		Tolerations:    Tolerations(pools),
		Resources:      exporterAgent,
		ServiceMonitor: enabled{Enabled: false},
		CustomMetrics:  DCGMMetrics,
	}), s.Values.DCGMExporter)
}

type enabled struct {
	Enabled bool `json:"enabled"`
}

// operand is one component the GPU operator runs on every GPU node.
type operand struct {
	Enabled   *bool      `json:"enabled,omitempty"`
	Resources *resources `json:"resources,omitempty"`
}

type gpuOperatorValues struct {
	// The operator recognises a GPU node by node-feature-discovery's PCI
	// labels and resets nvidia.com/gpu.present to false on a node without
	// them (controllers/nodelabeling_controller.go, reconcileCommonGPULabel,
	// at v26.7.0): NFD must run, the subchart's or the cluster's own.
	NFD        enabled `json:"nfd"`
	Daemonsets struct {
		Tolerations []toleration `json:"tolerations"`
	} `json:"daemonsets"`
	Driver             operand `json:"driver"`
	Toolkit            operand `json:"toolkit"`
	Validator          operand `json:"validator"`
	GFD                operand `json:"gfd"`
	NodeStatusExporter operand `json:"nodeStatusExporter"`
	// MIG.Strategy is empty: the chart then writes none into the
	// ClusterPolicy, and the operator sets no MIG_STRATEGY, leaving the
	// strategy to each node's device plugin config (applyMIGConfiguration
	// in controllers/object_controls.go at v26.7.0).
	MIG struct {
		Strategy string `json:"strategy"`
	} `json:"mig"`
	MIGManager   operand `json:"migManager"`
	DevicePlugin struct {
		Resources resources `json:"resources"`
		Config    struct {
			Create  bool              `json:"create"`
			Name    string            `json:"name"`
			Default string            `json:"default"`
			Data    map[string]string `json:"data"`
		} `json:"config"`
	} `json:"devicePlugin"`
	DCGMExporter struct {
		Resources      resources      `json:"resources"`
		ServiceMonitor serviceMonitor `json:"serviceMonitor"`
		// Config is a metrics ConfigMap the chart creates; the operator
		// mounts it and points DCGM_EXPORTER_COLLECTORS at it.
		Config struct {
			Name   string `json:"name"`
			Create bool   `json:"create"`
			Data   string `json:"data"`
		} `json:"config"`
	} `json:"dcgmExporter"`
}

// Requests and limits of the GPU node agents. The driver container builds
// and loads kernel modules, hence its memory.
var (
	smallAgent = resources{
		Requests: resourceList{CPU: "50m", Memory: "64Mi"},
		Limits:   resourceList{CPU: "500m", Memory: "256Mi"},
	}
	exporterAgent = resources{
		Requests: resourceList{CPU: "100m", Memory: "128Mi"},
		Limits:   resourceList{CPU: "1", Memory: "1Gi"},
	}
	driverAgent = resources{
		Requests: resourceList{CPU: "100m", Memory: "512Mi"},
		Limits:   resourceList{CPU: "2", Memory: "4Gi"},
	}
)

// GPUOperatorValues are the gpu-operator chart's values: driver and toolkit
// managed by the operator, its own device plugin and DCGM exporter.
func GPUOperatorValues(s Spec, pools []gpupool.Facts) map[string]any {
	on := true
	agent := func(r resources) operand { return operand{Resources: &r} }
	var v gpuOperatorValues
	v.NFD.Enabled = s.NFD == NFDInstall
	v.Daemonsets.Tolerations = Tolerations(pools)
	v.Driver = operand{Enabled: &on, Resources: &driverAgent}
	v.Toolkit = operand{Enabled: &on, Resources: &smallAgent}
	v.Validator, v.GFD, v.NodeStatusExporter = agent(smallAgent), agent(smallAgent), agent(smallAgent)
	migOn := slices.ContainsFunc(pools, hasMIG)
	v.MIGManager = operand{Enabled: &migOn, Resources: &smallAgent}
	v.DevicePlugin.Resources = smallAgent
	c := &v.DevicePlugin.Config
	c.Create, c.Name, c.Default, c.Data = true, DevicePluginConfigMap, "default", devicePluginConfigs(pools)
	v.DCGMExporter.Resources = exporterAgent
	v.DCGMExporter.ServiceMonitor = dcgmServiceMonitor(s)
	mc := &v.DCGMExporter.Config
	mc.Name, mc.Create, mc.Data = DCGMMetricsConfigMap, true, DCGMMetrics
	return helm.Merge(helm.Values(v), s.Values.GPUOperator)
}
