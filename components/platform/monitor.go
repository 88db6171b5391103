package platform

import "github.com/natron/gpu-node-pools/internal/monitoring"

// DCGMExporterServiceMonitor scrapes the dcgm-exporter chart's Service.
func DCGMExporterServiceMonitor(s Spec) map[string]any {
	return monitoring.ServiceMonitor("dcgm-exporter", s.Namespace, s.Monitoring.ServiceMonitorLabels,
		map[string]string{"app.kubernetes.io/name": "dcgm-exporter", "app.kubernetes.io/instance": "dcgm-exporter"},
		"metrics", s.Monitoring.ScrapeInterval)
}
