// Package platform is the GPU platform layer that runs on every pool,
// identical on AKS and bare metal: the NVIDIA device plugin and DCGM exporter
// (or the GPU operator where drivers are not preinstalled), GPU-aware alert
// rules for the cluster's Prometheus, and Grafana dashboards.
package platform

import (
	"cmp"
	"slices"

	"github.com/natron/gpu-node-pools/internal/helm"
)

// GPUStack says who provides the GPU plumbing on the nodes.
type GPUStack string

const (
	// DevicePlugin: drivers come with the node image (AKS); the NVIDIA
	// device plugin and DCGM exporter charts run on the GPU nodes.
	DevicePlugin GPUStack = "device-plugin"
	// GPUOperator: the NVIDIA GPU operator installs driver and container
	// toolkit and runs its own device plugin and DCGM exporter (bare metal).
	GPUOperator GPUStack = "gpu-operator"
)

// GPUStacks lists the valid stacks.
var GPUStacks = []GPUStack{DevicePlugin, GPUOperator}

// Spec is the platform block of the stack config (gpu-node-pools:platform).
// Every field is optional; Defaults fills what is left out, and a defaulted
// Spec is what the component takes.
type Spec struct {
	// GPUStack is who provides the GPU plumbing: device-plugin (with the
	// DCGM exporter) or gpu-operator. AKS refuses gpu-operator: its node
	// image ships the driver.
	// Default: the target's (device-plugin on aks, gpu-operator on natron).
	GPUStack GPUStack `json:"gpuStack,omitempty"`
	// Namespace holds the GPU DaemonSets and nothing else (Pod Security
	// privileged).
	// Default: gpu-platform.
	Namespace string `json:"namespace,omitempty"`
	// ChartDir is a directory of chart archives (<chart>-<version>.tgz) used
	// instead of the Helm repositories, for every chart of the stack:
	// air-gapped sites, tests.
	// Default: GPU_NODE_POOLS_CHART_DIR in make.
	ChartDir string `json:"chartDir,omitempty"`
	// Charts overrides each chart's version and repository.
	Charts Charts `json:"charts,omitempty"`
	// Values are extra Helm values per chart, merged over the program's:
	// the escape hatch for what the typed options do not cover.
	Values ExtraValues `json:"values,omitempty"`
	// Monitoring connects the layer to the cluster's existing Prometheus
	// and Grafana.
	Monitoring Monitoring `json:"monitoring,omitempty"`
	// Alerts are the thresholds and durations of the GPU alert rules.
	Alerts Alerts `json:"alerts,omitempty"`
	// SkipAwait applies the charts without waiting for their workloads to
	// become ready: clusters whose nodes are still joining, API-only tests.
	// Default: false.
	SkipAwait bool `json:"skipAwait,omitempty"`
	// NFD is who runs node-feature-discovery for the GPU operator, which
	// recognises GPU nodes by its PCI labels: install (the operator's
	// subchart) or existing (the cluster's own, which must run on GPU
	// nodes).
	// Default: install with the GPU operator.
	NFD string `json:"nfd,omitempty"`
}

// NFD modes.
const (
	NFDInstall  = "install"
	NFDExisting = "existing"
)

// NFDModes lists the modes.
var NFDModes = []string{NFDInstall, NFDExisting}

// nfdImage is node-feature-discovery's, which the GPU operator chart's
// subchart runs when it installs NFD.
const nfdImage = "registry.k8s.io/nfd/node-feature-discovery"

// Charts are the upstream charts of the layer: overrides in config, the
// pinned charts with them applied once defaulted.
type Charts struct {
	// DevicePlugin pins NVIDIA's k8s-device-plugin chart.
	DevicePlugin helm.Chart `json:"devicePlugin,omitempty"`
	// DCGMExporter pins NVIDIA's dcgm-exporter chart.
	DCGMExporter helm.Chart `json:"dcgmExporter,omitempty"`
	// GPUOperator pins NVIDIA's gpu-operator chart.
	GPUOperator helm.Chart `json:"gpuOperator,omitempty"`
}

// ExtraValues are user Helm values per chart.
type ExtraValues struct {
	// DevicePlugin are extra values for the device plugin chart.
	DevicePlugin map[string]any `json:"devicePlugin,omitempty"`
	// DCGMExporter are extra values for the DCGM exporter chart.
	DCGMExporter map[string]any `json:"dcgmExporter,omitempty"`
	// GPUOperator are extra values for the GPU operator chart.
	GPUOperator map[string]any `json:"gpuOperator,omitempty"`
}

// Monitoring is how the layer plugs into the cluster's Prometheus/Grafana.
type Monitoring struct {
	// ServiceMonitorLabels are the labels the cluster's Prometheus selects
	// ServiceMonitors by (its serviceMonitorSelector).
	// Default: release: kube-prometheus-stack.
	ServiceMonitorLabels map[string]string `json:"serviceMonitorLabels,omitempty"`
	// RuleLabels are the labels of the alerts' PrometheusRule (the
	// Prometheus ruleSelector).
	// Default: the ServiceMonitor labels.
	RuleLabels map[string]string `json:"ruleLabels,omitempty"`
	// ScrapeInterval is the DCGM exporter's scrape interval.
	// Default: 15s.
	ScrapeInterval string `json:"scrapeInterval,omitempty"`
	// GrafanaFolder is the dashboards' Grafana folder.
	// Default: GPU.
	GrafanaFolder string `json:"grafanaFolder,omitempty"`
}

// Alerts are thresholds (plain numbers) and durations (Prometheus durations
// such as 30m).
type Alerts struct {
	// IdleUtilizationPercent is the GPU utilization under which a GPU counts
	// as idle (GPUIdle).
	// Default: 10.
	IdleUtilizationPercent float64 `json:"idleUtilizationPercent,omitempty"`
	// IdleFor is how long a GPU stays idle before GPUIdle fires.
	// Default: 30m.
	IdleFor string `json:"idleFor,omitempty"`
	// MemoryUsedPercent is the framebuffer use above which
	// GPUMemoryNearlyFull fires.
	// Default: 95.
	MemoryUsedPercent float64 `json:"memoryUsedPercent,omitempty"`
	// MemoryFor is how long the framebuffer stays that full.
	// Default: 5m.
	MemoryFor string `json:"memoryFor,omitempty"`
	// LatencyP99Seconds is the inference p99 latency above which the latency
	// alert fires.
	// Default: 10.
	LatencyP99Seconds float64 `json:"latencyP99Seconds,omitempty"`
	// LatencyFor is how long the p99 latency stays that high.
	// Default: 10m.
	LatencyFor string `json:"latencyFor,omitempty"`
	// TemperatureCelsius is the GPU temperature above which the temperature
	// alert fires.
	// Default: 85.
	TemperatureCelsius float64 `json:"temperatureCelsius,omitempty"`
	// TemperatureFor is how long the GPU stays that hot.
	// Default: 5m.
	TemperatureFor string `json:"temperatureFor,omitempty"`
	// ExporterDownFor is how long a DCGM exporter may be down, or a GPU node
	// run without one, before an alert fires.
	// Default: 10m.
	ExporterDownFor string `json:"exporterDownFor,omitempty"`
}

// Pinned upstream charts; stacks may override version and repository. The
// images are what each chart runs with the program's values (the chart
// tests check them against the rendered charts and the GPU operator's
// operand images).
var (
	DevicePluginChart = helm.Chart{Name: "nvidia-device-plugin", Version: "0.20.0", Repo: "https://nvidia.github.io/k8s-device-plugin",
		Images: []string{"nvcr.io/nvidia/k8s-device-plugin"}}
	DCGMExporterChart = helm.Chart{Name: "dcgm-exporter", Version: "4.8.2", Repo: "https://nvidia.github.io/dcgm-exporter/helm-charts",
		Images: []string{"nvcr.io/nvidia/k8s/dcgm-exporter"}}
	// The operator and every operand its ClusterPolicy names (driver,
	// toolkit, device plugin, DCGM exporter, MIG manager, validator and the
	// rest, a dozen images that change with each release) come from
	// nvcr.io/nvidia; node-feature-discovery's image is added when the
	// chart installs it.
	GPUOperatorChart = helm.Chart{Name: "gpu-operator", Version: "v26.7.0", Repo: "https://helm.ngc.nvidia.com/nvidia",
		Images: []string{"nvcr.io/nvidia"}}
)

// DefaultNamespace holds the GPU DaemonSets.
const DefaultNamespace = "gpu-platform"

// Defaults returns s with every unset field filled; gpuStack is the
// target's default GPU stack.
func (s Spec) Defaults(gpuStack GPUStack) Spec {
	s.GPUStack = cmp.Or(s.GPUStack, gpuStack)
	s.Namespace = cmp.Or(s.Namespace, DefaultNamespace)
	s.Charts.DevicePlugin = DevicePluginChart.With(s.Charts.DevicePlugin)
	s.Charts.DCGMExporter = DCGMExporterChart.With(s.Charts.DCGMExporter)
	s.Charts.GPUOperator = GPUOperatorChart.With(s.Charts.GPUOperator)
	if s.GPUStack == GPUOperator {
		s.NFD = cmp.Or(s.NFD, NFDInstall)
		if s.NFD == NFDInstall {
			s.Charts.GPUOperator.Images = slices.Concat(s.Charts.GPUOperator.Images, []string{nfdImage})
		}
	}
	m := &s.Monitoring
	if m.ServiceMonitorLabels == nil {
		m.ServiceMonitorLabels = map[string]string{"release": "kube-prometheus-stack"}
	}
	if m.RuleLabels == nil {
		m.RuleLabels = m.ServiceMonitorLabels
	}
	m.ScrapeInterval = cmp.Or(m.ScrapeInterval, "15s")
	m.GrafanaFolder = cmp.Or(m.GrafanaFolder, "GPU")
	a := &s.Alerts
	a.IdleUtilizationPercent = cmp.Or(a.IdleUtilizationPercent, 10)
	a.IdleFor = cmp.Or(a.IdleFor, "30m")
	a.MemoryUsedPercent = cmp.Or(a.MemoryUsedPercent, 95)
	a.MemoryFor = cmp.Or(a.MemoryFor, "5m")
	a.LatencyP99Seconds = cmp.Or(a.LatencyP99Seconds, 10)
	a.LatencyFor = cmp.Or(a.LatencyFor, "10m")
	a.TemperatureCelsius = cmp.Or(a.TemperatureCelsius, 85)
	a.TemperatureFor = cmp.Or(a.TemperatureFor, "5m")
	a.ExporterDownFor = cmp.Or(a.ExporterDownFor, "10m")
	return s
}

// Installed are the charts a defaulted spec installs: the device plugin
// and DCGM exporter, or the GPU operator alone (it brings both).
func (s Spec) Installed() []helm.Chart {
	if s.GPUStack == GPUOperator {
		return []helm.Chart{s.Charts.GPUOperator}
	}
	return []helm.Chart{s.Charts.DevicePlugin, s.Charts.DCGMExporter}
}

// RuntimeClass is the RuntimeClass GPU pods run with: the GPU operator
// installs "nvidia"; with the device plugin the node's default runtime
// already exposes the GPUs ("").
func (s Spec) RuntimeClass() string {
	if s.GPUStack == GPUOperator {
		return "nvidia"
	}
	return ""
}
