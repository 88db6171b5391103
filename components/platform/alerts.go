package platform

import (
	"fmt"
	"strconv"

	"github.com/natron/gpu-node-pools/internal/monitoring"
)

// Rule is one alerting rule of the PrometheusRule.
type Rule = monitoring.Rule

// dcgmJob matches the DCGM exporter's scrape job whichever chart runs it
// (dcgm-exporter or the GPU operator's nvidia-dcgm-exporter).
const dcgmJob = `job=~".*dcgm-exporter.*"`

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// AlertRules are the GPU-aware alerts for a defaulted spec. Each carries a
// severity, a summary, a description and the advice to act on.
func AlertRules(s Spec) []Rule {
	a := s.Alerts
	rule := func(name, expr, forDur, severity, summary, description, advice string) Rule {
		return Rule{
			Alert:  name,
			Expr:   expr,
			For:    forDur,
			Labels: map[string]string{"severity": severity, "component": "gpu"},
			Annotations: map[string]string{
				"summary":     summary,
				"description": description,
				"advice":      advice,
			},
		}
	}
	return []Rule{
		rule("GPUIdle",
			fmt.Sprintf(`max by (node, gpu, modelName) (DCGM_FI_DEV_GPU_UTIL{%s}) < %s`, dcgmJob, num(a.IdleUtilizationPercent)),
			a.IdleFor, "warning",
			"GPU {{ $labels.gpu }} on {{ $labels.node }} is idle",
			fmt.Sprintf("GPU utilization has been below %s%% for %s ({{ $value }}%% now) on a {{ $labels.modelName }}.", num(a.IdleUtilizationPercent), a.IdleFor),
			"You are paying for an idle GPU: lower the pool's minNodes so the autoscaler can remove the node, share the GPU (timeSlicing or MIG), or move the workload to a spot pool."),
		rule("GPUMemoryNearOOM",
			fmt.Sprintf(`max by (node, gpu, modelName) (DCGM_FI_DEV_FB_USED{%[1]s} / (DCGM_FI_DEV_FB_USED{%[1]s} + DCGM_FI_DEV_FB_FREE{%[1]s})) * 100 > %[2]s`, dcgmJob, num(a.MemoryUsedPercent)),
			a.MemoryFor, "warning",
			"GPU {{ $labels.gpu }} on {{ $labels.node }} is almost out of memory",
			fmt.Sprintf("Framebuffer memory use is above %s%% ({{ $value | humanize }}%%).", num(a.MemoryUsedPercent)),
			"The model is near OOM and the next batch may fail: lower the batch size, max model length or gpuMemoryUtilization, raise tensor parallelism, or move to a GPU with more memory."),
		rule("InferenceLatencyP99High",
			fmt.Sprintf(`histogram_quantile(0.99, sum by (le, namespace, model_name) (rate(vllm:e2e_request_latency_seconds_bucket[5m]))) > %s`, num(a.LatencyP99Seconds)),
			a.LatencyFor, "warning",
			"p99 latency of {{ $labels.model_name }} is high",
			fmt.Sprintf("The 99th percentile end-to-end request latency of {{ $labels.model_name }} in {{ $labels.namespace }} is {{ $value | humanizeDuration }}, above %ss.", num(a.LatencyP99Seconds)),
			"Add replicas (raise maxReplicas or lower queueDepthTarget) or serve the model from a larger GPU."),
		rule("GPUTemperatureHigh",
			fmt.Sprintf(`max by (node, gpu, modelName) (DCGM_FI_DEV_GPU_TEMP{%s}) > %s`, dcgmJob, num(a.TemperatureCelsius)),
			a.TemperatureFor, "critical",
			"GPU {{ $labels.gpu }} on {{ $labels.node }} runs hot",
			fmt.Sprintf("GPU temperature is {{ $value }} °C, above %s °C.", num(a.TemperatureCelsius)),
			"Thermal throttling is ahead: check the node's cooling and airflow, or reduce the batch size."),
		// DCGM_FI_DEV_XID_ERRORS holds the last XID for good; the XID count
		// (enabled in DCGMMetrics) counts each error in a 5-minute window,
		// so the alert fires per event and resolves when the window passes.
		rule("GPUXIDError",
			fmt.Sprintf(`max by (node, gpu, modelName, xid) (DCGM_EXP_XID_ERRORS_COUNT{%s, xid!=""}) > 0`, dcgmJob),
			"", "critical",
			"GPU {{ $labels.gpu }} on {{ $labels.node }} reported XID {{ $labels.xid }}",
			"The driver reported XID error {{ $labels.xid }} {{ $value }} time(s) in the last 5 minutes.",
			"Look the XID up in NVIDIA's XID catalogue: 48/63/64/74/79/94/95 mean a failing or fallen-off GPU, so cordon and drain the node and replace it; 13/31/43 usually point at the application."),
		rule("DCGMExporterDown",
			fmt.Sprintf(`up{%s} == 0`, dcgmJob),
			a.ExporterDownFor, "warning",
			"DCGM exporter on {{ $labels.node }} is down",
			"Prometheus cannot scrape the DCGM exporter on {{ $labels.node }}: this node's GPUs are unmonitored and its GPU alerts cannot fire.",
			"Check the exporter pod on the node (kubectl -n "+s.Namespace+" get pods -o wide) and its logs; a driver problem often shows there first."),
		rule("GPUNodeWithoutExporter",
			fmt.Sprintf(`max by (node) (kube_node_status_capacity{resource="nvidia_com_gpu"}) > 0 unless on (node) max by (node) (up{%s})`, dcgmJob),
			a.ExporterDownFor, "warning",
			"GPU node {{ $labels.node }} has no DCGM exporter",
			"The node offers GPUs but no DCGM exporter is scraped there: its GPUs are unmonitored.",
			"Check that the exporter DaemonSet tolerates the node's taints and matches its labels (nvidia.com/gpu.present=true), and that the ServiceMonitor labels match Prometheus's selector."),
	}
}

// PrometheusRule is the prometheus-operator object holding the rules.
func PrometheusRule(s Spec, name string) map[string]any {
	return monitoring.PrometheusRule(name, s.Namespace, s.Monitoring.RuleLabels, "gpu-node-pools.gpu", AlertRules(s))
}
