package stacks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/components/plain"
	"github.com/natron/gpu-node-pools/components/platform"
)

var (
	promDurationRe = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
	chartVersionRe = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$`)
)

// validatePlatform checks gpu-node-pools:platform as written (before
// defaults), and that a chart directory holds every chart the stack needs.
func validatePlatform(ps *problems, cfg *Config) {
	s := cfg.Platform
	p := func(k string) string { return key("platform." + k) }
	switch s.GPUStack {
	case "", platform.DevicePlugin:
	case platform.GPUOperator:
		if cfg.Target == catalog.AKS {
			ps.add(p("gpuStack"), "AKS node images ship the NVIDIA driver: use device-plugin on target aks, got %q", s.GPUStack)
		}
	default:
		ps.add(p("gpuStack"), "must be one of device-plugin, gpu-operator, got %q", s.GPUStack)
	}
	if s.Namespace != "" && !dnsLabelRe.MatchString(s.Namespace) {
		ps.add(p("namespace"), "must be a DNS label, got %q", s.Namespace)
	}
	charts := map[string]platform.Chart{"devicePlugin": s.Charts.DevicePlugin, "dcgmExporter": s.Charts.DCGMExporter, "gpuOperator": s.Charts.GPUOperator}
	for _, name := range plain.SortedKeys(charts) {
		c := charts[name]
		if c.Version != "" && !chartVersionRe.MatchString(c.Version) {
			ps.add(p("charts."+name+".version"), "must be a chart version such as 0.20.0, got %q", c.Version)
		}
		if c.Repo != "" && !strings.HasPrefix(c.Repo, "https://") && !strings.HasPrefix(c.Repo, "oci://") {
			ps.add(p("charts."+name+".repo"), "must be an https:// or oci:// Helm repository, got %q", c.Repo)
		}
	}
	m := s.Monitoring
	validateLabels(ps, p("monitoring.serviceMonitorLabels"), m.ServiceMonitorLabels)
	validateLabels(ps, p("monitoring.ruleLabels"), m.RuleLabels)
	if m.ScrapeInterval != "" && !promDurationRe.MatchString(m.ScrapeInterval) {
		ps.add(p("monitoring.scrapeInterval"), "must be a Prometheus duration such as 15s, got %q", m.ScrapeInterval)
	}
	a := s.Alerts
	durations := map[string]string{"idleFor": a.IdleFor, "memoryFor": a.MemoryFor, "latencyFor": a.LatencyFor, "temperatureFor": a.TemperatureFor, "exporterDownFor": a.ExporterDownFor}
	for _, k := range plain.SortedKeys(durations) {
		d := durations[k]
		if d != "" && !promDurationRe.MatchString(d) {
			ps.add(p("alerts."+k), "must be a Prometheus duration such as 30m, got %q", d)
		}
	}
	percents := map[string]float64{"idleUtilizationPercent": a.IdleUtilizationPercent, "memoryUsedPercent": a.MemoryUsedPercent}
	for _, k := range plain.SortedKeys(percents) {
		v := percents[k]
		if v < 0 || v > 100 {
			ps.add(p("alerts."+k), "must be a percentage between 0 and 100, got %v", v)
		}
	}
	if a.LatencyP99Seconds < 0 {
		ps.add(p("alerts.latencyP99Seconds"), "must be > 0 seconds, got %v", a.LatencyP99Seconds)
	}
	if t := a.TemperatureCelsius; t != 0 && (t < 40 || t > 110) {
		ps.add(p("alerts.temperatureCelsius"), "must be between 40 and 110 °C, got %v", t)
	}
	validateChartDir(ps, cfg)
}

// validateChartDir fails early, naming the missing archive, rather than in
// the middle of an up.
func validateChartDir(ps *problems, cfg *Config) {
	dir := cfg.Platform.ChartDir
	if dir == "" || (cfg.Target != catalog.AKS && cfg.Target != catalog.Natron) {
		return
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		ps.add(key("platform.chartDir"), "must be a directory of chart archives (or set %s), got %q", ChartDirEnv, dir)
		return
	}
	s := cfg.Platform.Defaults(cfg.Target == catalog.AKS)
	if !slices.Contains(platform.GPUStacks, s.GPUStack) {
		return
	}
	for _, r := range platform.Releases(s, nil) {
		if _, err := os.Stat(r.Source.Chart); err != nil {
			ps.add(key("platform.chartDir"), "has no %s: put the chart archive there, got %q", filepath.Base(r.Source.Chart), fmt.Sprint(dir))
		}
	}
}
