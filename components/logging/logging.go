// Package logging makes the GPU nodes' logs reach the customer's log
// store: the tolerations a node-level log collector needs to run on GPU
// (and spot) nodes, and, where a stack asks for it, Grafana Alloy as that
// collector, shipping to the customer's Loki.
package logging

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

// Spec is the logging block (gpu-node-pools:logging).
type Spec struct {
	// Install runs Grafana Alloy as the log collector of the GPU nodes;
	// without it the cluster's own collector must tolerate the taints the
	// stack outputs (logCollectorTolerations).
	// Default: false.
	Install bool `json:"install,omitempty"`
	// Namespace holds Alloy.
	// Default: logging.
	Namespace string `json:"namespace,omitempty"`
	// LokiURL is the push endpoint of the customer's Loki, e.g.
	// http://loki-gateway.loki.svc/loki/api/v1/push (required with install).
	LokiURL string `json:"lokiUrl,omitempty"`
	// Chart pins the Alloy chart.
	Chart helm.Chart `json:"chart,omitempty"`
	// Values are extra Helm values merged over the program's.
	Values map[string]any `json:"values,omitempty"`
}

// AlloyChart is the pinned Grafana Alloy chart and the images it runs.
var AlloyChart = helm.Chart{Name: "alloy", Version: "1.11.1", Repo: "https://grafana.github.io/helm-charts",
	Images: []string{"docker.io/grafana/alloy", "quay.io/prometheus-operator/prometheus-config-reloader"}}

// DefaultNamespace holds Alloy unless logging.namespace says.
const DefaultNamespace = "logging"

// Validate checks the block as written.
func (s Spec) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Namespace != "" && !fielderr.DNSLabel(s.Namespace) {
		errs = append(errs, fielderr.Invalid(p.Child("namespace"), s.Namespace, "must be a DNS label"))
	}
	if s.Install {
		u, err := url.Parse(s.LokiURL)
		if s.LokiURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fielderr.Invalid(p.Child("lokiUrl"), s.LokiURL,
				"required with install: the http(s) push URL of the cluster's Loki, e.g. http://loki-gateway.loki.svc/loki/api/v1/push"))
		}
	} else if s.LokiURL != "" || len(s.Values) > 0 {
		errs = append(errs, fielderr.Forbidden(p.Child("install"), s.Install, "lokiUrl and values configure the Alloy the program installs: set install: true, or leave them out"))
	}
	return append(errs, s.Chart.Validate(p.Child("chart"), AlloyChart.Version)...)
}

// Defaults fills the namespace and the pinned chart.
func (s Spec) Defaults() Spec {
	if s.Namespace == "" {
		s.Namespace = DefaultNamespace
	}
	s.Chart = AlloyChart.With(s.Chart)
	return s
}

// Tolerations are what a node-level log collector needs to run on every
// node of the pools: each pool's taints (the GPU taint, and the spot taint
// on spot pools), once each.
func Tolerations(pools []gpupool.Facts) []gpupool.Toleration {
	var out []gpupool.Toleration
	for _, p := range pools {
		for _, t := range p.Tolerations {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// Config is Alloy's configuration: the pods of its own node (HOSTNAME is
// the node's name: the chart's agent container template at 1.11.1), read through
// the API server (loki.source.kubernetes: no host paths, so the collector
// runs as a restricted pod), labelled with namespace, pod, container and
// node, pushed to Loki.
func Config(lokiURL string) string {
	return strings.TrimSpace(fmt.Sprintf(`
discovery.kubernetes "pods" {
  role = "pod"
  selectors {
    role  = "pod"
    field = "spec.nodeName=" + coalesce(sys.env("HOSTNAME"), constants.hostname)
  }
}

discovery.relabel "pods" {
  targets = discovery.kubernetes.pods.targets
  rule {
    source_labels = ["__meta_kubernetes_namespace"]
    target_label  = "namespace"
  }
  rule {
    source_labels = ["__meta_kubernetes_pod_name"]
    target_label  = "pod"
  }
  rule {
    source_labels = ["__meta_kubernetes_pod_container_name"]
    target_label  = "container"
  }
  rule {
    source_labels = ["__meta_kubernetes_pod_node_name"]
    target_label  = "node"
  }
}

loki.source.kubernetes "pods" {
  targets    = discovery.relabel.pods.output
  forward_to = [loki.write.default.receiver]
}

loki.write "default" {
  endpoint {
    url = %q
  }
}
`, lokiURL))
}

// Release is the Alloy chart's release: a DaemonSet that tolerates the
// pools' taints, restricted (non-root, read-only root, a scratch volume
// for its storage path), with requests and limits, on the node's name.
func Release(s Spec, pools []gpupool.Facts, src helm.Source) helm.Release {
	tolerations := make([]any, 0)
	for _, t := range Tolerations(pools) {
		tolerations = append(tolerations, map[string]any{"key": t.Key, "operator": t.Operator, "value": t.Value, "effect": t.Effect})
	}
	container := podsecurity.ContainerContext(true)
	values := map[string]any{
		"global": map[string]any{"podSecurityContext": podsecurity.PodContext()},
		// the PodLogs CRD: the config here needs none
		"crds": map[string]any{"create": false},
		"controller": map[string]any{
			"type":        "daemonset",
			"tolerations": tolerations,
			"volumes": map[string]any{"extra": []any{
				map[string]any{"name": "storage", "emptyDir": map[string]any{"sizeLimit": "1Gi"}},
			}},
		},
		"alloy": map[string]any{
			"configMap":       map[string]any{"create": true, "content": Config(s.LokiURL)},
			"storagePath":     "/var/lib/alloy",
			"securityContext": container,
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
				"limits":   map[string]any{"memory": "512Mi"},
			},
			// the chart sets HOSTNAME to the node's name, which the config reads
			"mounts": map[string]any{"extra": []any{map[string]any{"name": "storage", "mountPath": "/var/lib/alloy"}}},
		},
		"configReloader": map[string]any{
			"securityContext": container,
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "10m", "memory": "50Mi"},
				"limits":   map[string]any{"memory": "100Mi"},
			},
		},
	}
	return src.Release("alloy", s.Chart, helm.Merge(values, s.Values))
}
