package platform

import "github.com/natron/gpu-node-pools/internal/monitoring"

// DCGMExporterServiceMonitor scrapes the dcgm-exporter chart's Service,
// by the chart's name and component labels (templates/_helpers.tpl,
// 4.8.2): not app.kubernetes.io/instance, which Argo CD's label tracking
// rewrites on the Service.
func DCGMExporterServiceMonitor(s Spec) map[string]any {
	return monitoring.ServiceMonitor("dcgm-exporter", s.Namespace, s.Monitoring.ServiceMonitorLabels,
		map[string]string{"app.kubernetes.io/name": "dcgm-exporter", "app.kubernetes.io/component": "dcgm-exporter"},
		"metrics", s.Monitoring.ScrapeInterval)
}
