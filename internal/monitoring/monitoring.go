// Package monitoring holds the prometheus-operator objects the program
// writes itself: ServiceMonitors and PrometheusRules with their alerting
// rules.
package monitoring

import "github.com/natron/gpu-node-pools/internal/kube"

// ServiceMonitor is a prometheus-operator ServiceMonitor written by the
// program rather than by a chart: a chart's ServiceMonitor cannot be
// rendered without a cluster (the provider cannot tell whether an unknown
// kind is namespaced), while our own objects render like any other.
func ServiceMonitor(name, namespace string, labels, selector map[string]string, port, interval string) map[string]any {
	return map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "ServiceMonitor",
		"metadata":   map[string]any{"name": name, "namespace": namespace, "labels": kube.AnyMap(labels)},
		"spec": map[string]any{
			"selector":          map[string]any{"matchLabels": kube.AnyMap(selector)},
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

// Rule is one alerting rule of a PrometheusRule, as prometheus-operator
// passes it to Prometheus.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// PrometheusRule holds one group of the program's alerting rules; labels
// are what Prometheus's ruleSelector wants.
func PrometheusRule(name, namespace string, labels map[string]string, group string, rules []Rule) map[string]any {
	out := make([]any, 0, len(rules))
	for _, r := range rules {
		m := map[string]any{"alert": r.Alert, "expr": r.Expr, "labels": kube.AnyMap(r.Labels), "annotations": kube.AnyMap(r.Annotations)}
		if r.For != "" {
			m["for"] = r.For
		}
		out = append(out, m)
	}
	return map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata":   map[string]any{"name": name, "namespace": namespace, "labels": kube.AnyMap(labels)},
		"spec":       map[string]any{"groups": []any{map[string]any{"name": group, "rules": out}}},
	}
}
