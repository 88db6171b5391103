// Package kube holds the Kubernetes conventions the components share: who
// manages an object, and the ServiceMonitors the program writes itself.
package kube

// Project is the program's name: the config namespace, the prefix of every
// component type token and the managed-by value.
const Project = "gpu-node-pools"

// ManagedByLabel marks every object the program owns.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// ManagedBy is the value of ManagedByLabel (and of the managed-by tag on
// Azure resources).
const ManagedBy = Project

// ServiceMonitor is a prometheus-operator ServiceMonitor written by the
// program rather than by a chart: a chart's ServiceMonitor cannot be
// rendered without a cluster (the provider cannot tell whether an unknown
// kind is namespaced), while our own objects render like any other.
func ServiceMonitor(name, namespace string, labels, selector map[string]string, port, interval string) map[string]any {
	return map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "ServiceMonitor",
		"metadata":   map[string]any{"name": name, "namespace": namespace, "labels": AnyMap(labels)},
		"spec": map[string]any{
			"selector":          map[string]any{"matchLabels": AnyMap(selector)},
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

// AnyMap is a string map as the plain data objects are built from.
func AnyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
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
		m := map[string]any{"alert": r.Alert, "expr": r.Expr, "labels": AnyMap(r.Labels), "annotations": AnyMap(r.Annotations)}
		if r.For != "" {
			m["for"] = r.For
		}
		out = append(out, m)
	}
	return map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata":   map[string]any{"name": name, "namespace": namespace, "labels": AnyMap(labels)},
		"spec":       map[string]any{"groups": []any{map[string]any{"name": group, "rules": out}}},
	}
}
