package platform

// ServiceMonitor is a prometheus-operator ServiceMonitor written by the
// program rather than by a chart: a chart's ServiceMonitor cannot be
// rendered without a cluster (the provider cannot tell whether an unknown
// kind is namespaced), while our own objects render like any other.
func ServiceMonitor(name, namespace string, labels, selector map[string]string, port, interval string) map[string]any {
	return map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "ServiceMonitor",
		"metadata":   map[string]any{"name": name, "namespace": namespace, "labels": stringsToAny(labels)},
		"spec": map[string]any{
			"selector":          map[string]any{"matchLabels": stringsToAny(selector)},
			"namespaceSelector": map[string]any{"matchNames": []any{namespace}},
			"endpoints": []any{map[string]any{
				"port": port, "path": "/metrics", "interval": interval,
				// the node name makes per-node panels and the
				// "GPU node without exporter" alert possible
				"relabelings": []any{map[string]any{
					"sourceLabels": []any{"__meta_kubernetes_pod_node_name"}, "targetLabel": "node", "action": "replace",
				}},
			}},
		},
	}
}

// DCGMExporterServiceMonitor scrapes the dcgm-exporter chart's Service.
func DCGMExporterServiceMonitor(s Spec) map[string]any {
	return ServiceMonitor("dcgm-exporter", s.Namespace, s.Monitoring.ServiceMonitorLabels,
		map[string]string{"app.kubernetes.io/name": "dcgm-exporter", "app.kubernetes.io/instance": "dcgm-exporter"},
		"metrics", s.Monitoring.ScrapeInterval)
}
