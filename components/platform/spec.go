// Package platform is the GPU platform layer that runs on every pool,
// identical on AKS and bare metal: the NVIDIA device plugin and DCGM exporter
// (or the GPU operator where drivers are not preinstalled), GPU-aware alert
// rules for the cluster's Prometheus, and Grafana dashboards.
package platform

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
// Every field is optional; Defaults fills what is left out.
type Spec struct {
	// GPUStack defaults to device-plugin on AKS and gpu-operator on bare metal.
	GPUStack GPUStack `json:"gpuStack,omitempty"`
	// Namespace holds the GPU DaemonSets and nothing else.
	Namespace string `json:"namespace,omitempty"`
	// ChartDir is a directory of chart archives (<chart>-<version>.tgz) used
	// instead of the Helm repositories: air-gapped sites, tests.
	ChartDir string `json:"chartDir,omitempty"`
	// Charts pins each chart's version and repository.
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
	SkipAwait bool `json:"skipAwait,omitempty"`
}

// Chart is where one Helm chart comes from.
type Chart struct {
	Version string `json:"version,omitempty"`
	Repo    string `json:"repo,omitempty"`
}

// Charts are the upstream charts of the layer.
type Charts struct {
	DevicePlugin Chart `json:"devicePlugin,omitempty"`
	DCGMExporter Chart `json:"dcgmExporter,omitempty"`
	GPUOperator  Chart `json:"gpuOperator,omitempty"`
}

// ExtraValues are user Helm values per chart.
type ExtraValues struct {
	DevicePlugin map[string]any `json:"devicePlugin,omitempty"`
	DCGMExporter map[string]any `json:"dcgmExporter,omitempty"`
	GPUOperator  map[string]any `json:"gpuOperator,omitempty"`
}

// Monitoring is how the layer plugs into the cluster's Prometheus/Grafana.
type Monitoring struct {
	// ServiceMonitorLabels must match the Prometheus serviceMonitorSelector.
	ServiceMonitorLabels map[string]string `json:"serviceMonitorLabels,omitempty"`
	// RuleLabels must match the Prometheus ruleSelector; defaults to
	// ServiceMonitorLabels.
	RuleLabels map[string]string `json:"ruleLabels,omitempty"`
	// ScrapeInterval of the DCGM exporter.
	ScrapeInterval string `json:"scrapeInterval,omitempty"`
	// GrafanaFolder is where the dashboards appear.
	GrafanaFolder string `json:"grafanaFolder,omitempty"`
}

// Alerts are thresholds (plain numbers) and durations (Prometheus durations
// such as 30m).
type Alerts struct {
	IdleUtilizationPercent float64 `json:"idleUtilizationPercent,omitempty"`
	IdleFor                string  `json:"idleFor,omitempty"`
	MemoryUsedPercent      float64 `json:"memoryUsedPercent,omitempty"`
	MemoryFor              string  `json:"memoryFor,omitempty"`
	LatencyP99Seconds      float64 `json:"latencyP99Seconds,omitempty"`
	LatencyFor             string  `json:"latencyFor,omitempty"`
	TemperatureCelsius     float64 `json:"temperatureCelsius,omitempty"`
	TemperatureFor         string  `json:"temperatureFor,omitempty"`
	ExporterDownFor        string  `json:"exporterDownFor,omitempty"`
}

// Pinned upstream releases; stacks may override version and repository.
var (
	DefaultDevicePlugin = Chart{Version: "0.20.0", Repo: "https://nvidia.github.io/k8s-device-plugin"}
	DefaultDCGMExporter = Chart{Version: "4.8.2", Repo: "https://nvidia.github.io/dcgm-exporter/helm-charts"}
	DefaultGPUOperator  = Chart{Version: "v26.7.0", Repo: "https://helm.ngc.nvidia.com/nvidia"}
)

// DefaultNamespace holds the GPU DaemonSets.
const DefaultNamespace = "gpu-platform"

// Defaults returns s with every unset field filled; onAKS picks the GPU stack.
func (s Spec) Defaults(onAKS bool) Spec {
	if s.GPUStack == "" {
		s.GPUStack = GPUOperator
		if onAKS {
			s.GPUStack = DevicePlugin // the AKS node image ships the driver
		}
	}
	if s.Namespace == "" {
		s.Namespace = DefaultNamespace
	}
	s.Charts.DevicePlugin = chartDefaults(s.Charts.DevicePlugin, DefaultDevicePlugin)
	s.Charts.DCGMExporter = chartDefaults(s.Charts.DCGMExporter, DefaultDCGMExporter)
	s.Charts.GPUOperator = chartDefaults(s.Charts.GPUOperator, DefaultGPUOperator)
	m := &s.Monitoring
	if m.ServiceMonitorLabels == nil {
		m.ServiceMonitorLabels = map[string]string{"release": "kube-prometheus-stack"}
	}
	if m.RuleLabels == nil {
		m.RuleLabels = m.ServiceMonitorLabels
	}
	m.ScrapeInterval = or(m.ScrapeInterval, "15s")
	m.GrafanaFolder = or(m.GrafanaFolder, "GPU")
	a := &s.Alerts
	a.IdleUtilizationPercent = orNum(a.IdleUtilizationPercent, 10)
	a.IdleFor = or(a.IdleFor, "30m")
	a.MemoryUsedPercent = orNum(a.MemoryUsedPercent, 95)
	a.MemoryFor = or(a.MemoryFor, "5m")
	a.LatencyP99Seconds = orNum(a.LatencyP99Seconds, 10)
	a.LatencyFor = or(a.LatencyFor, "10m")
	a.TemperatureCelsius = orNum(a.TemperatureCelsius, 85)
	a.TemperatureFor = or(a.TemperatureFor, "5m")
	a.ExporterDownFor = or(a.ExporterDownFor, "10m")
	return s
}

func chartDefaults(c, d Chart) Chart {
	return Chart{Version: or(c.Version, d.Version), Repo: or(c.Repo, d.Repo)}
}

func or(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

func orNum(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

// ChartImages are image repositories the layer's charts run with the
// program's values (the tests check them against the rendered charts and
// the GPU operator's operand images); the registry policy must allow them.
func ChartImages(stack GPUStack) []string {
	if stack == GPUOperator {
		return []string{"nvcr.io/nvidia/gpu-operator", "nvcr.io/nvidia/driver", "registry.k8s.io/nfd/node-feature-discovery"}
	}
	return []string{"nvcr.io/nvidia/k8s-device-plugin", "nvcr.io/nvidia/k8s/dcgm-exporter"}
}
