package platform

import (
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
)

// Validate checks the block as written, before defaults. Whether the
// target allows the GPU stack, and whether the chart directory holds the
// charts, are checked when the stack's plan is made.
func (s Spec) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.GPUStack != "" {
		errs = append(errs, fielderr.OneOf(p.Child("gpuStack"), s.GPUStack, GPUStacks)...)
	}
	if s.NFD != "" {
		errs = append(errs, fielderr.OneOf(p.Child("nfd"), s.NFD, NFDModes)...)
	}
	if s.Namespace != "" && !fielderr.DNSLabel(s.Namespace) {
		errs = append(errs, fielderr.Invalid(p.Child("namespace"), s.Namespace, "must be a DNS label"))
	}
	charts := p.Child("charts")
	// one example version for all three: the message is about the form
	errs = append(errs, s.Charts.DevicePlugin.Validate(charts.Child("devicePlugin"), DevicePluginChart.Version)...)
	errs = append(errs, s.Charts.DCGMExporter.Validate(charts.Child("dcgmExporter"), DevicePluginChart.Version)...)
	errs = append(errs, s.Charts.GPUOperator.Validate(charts.Child("gpuOperator"), DevicePluginChart.Version)...)

	m, mp := s.Monitoring, p.Child("monitoring")
	errs = append(errs, fielderr.Labels(mp.Child("serviceMonitorLabels"), m.ServiceMonitorLabels, nil, nil)...)
	errs = append(errs, fielderr.Labels(mp.Child("ruleLabels"), m.RuleLabels, nil, nil)...)
	errs = append(errs, duration(mp.Child("scrapeInterval"), m.ScrapeInterval, "15s")...)

	a, ap := s.Alerts, p.Child("alerts")
	for _, d := range []struct{ key, value string }{
		{"exporterDownFor", a.ExporterDownFor}, {"idleFor", a.IdleFor}, {"latencyFor", a.LatencyFor},
		{"memoryFor", a.MemoryFor}, {"temperatureFor", a.TemperatureFor},
	} {
		errs = append(errs, duration(ap.Child(d.key), d.value, "30m")...)
	}
	for _, pc := range []struct {
		key   string
		value float64
	}{{"idleUtilizationPercent", a.IdleUtilizationPercent}, {"memoryUsedPercent", a.MemoryUsedPercent}} {
		if pc.value < 0 || pc.value > 100 {
			errs = append(errs, fielderr.Invalid(ap.Child(pc.key), pc.value, "must be a percentage between 0 and 100"))
		}
	}
	if a.LatencyP99Seconds < 0 {
		errs = append(errs, fielderr.Invalid(ap.Child("latencyP99Seconds"), a.LatencyP99Seconds, "must be > 0 seconds"))
	}
	if t := a.TemperatureCelsius; t != 0 && (t < 40 || t > 110) {
		errs = append(errs, fielderr.Invalid(ap.Child("temperatureCelsius"), t, "must be between 40 and 110 °C"))
	}
	return errs
}

// duration checks an optional Prometheus duration with Prometheus's own
// parser (units largest first, as in 1h30m); zero is refused.
func duration(p *field.Path, v, example string) field.ErrorList {
	if v == "" {
		return nil
	}
	if d, err := model.ParseDuration(v); err != nil || d <= 0 {
		return field.ErrorList{fielderr.Invalid(p, v, "must be a Prometheus duration such as %s", example)}
	}
	return nil
}

// CheckNFD refuses an NFD mode where it means nothing: the device plugin
// stack needs no feature discovery (the pools label their nodes).
func CheckNFD(p *field.Path, stack GPUStack, nfd string) field.ErrorList {
	if nfd != "" && stack != GPUOperator {
		return field.ErrorList{fielderr.Forbidden(p, nfd, "only with gpuStack gpu-operator, which recognises GPU nodes by node-feature-discovery's labels")}
	}
	return nil
}
