package platform

import (
	_ "embed"
	"strings"
)

// DCGMMetrics is the DCGM exporter's metrics file on both GPU stacks: the
// exporter's default counters plus the XID count the XID alert reads.
//
//go:embed dcgm-metrics.csv
var DCGMMetrics string

// DCGMMetricsConfigMap names the metrics ConfigMap the GPU operator's
// chart creates (the dcgm-exporter chart names its own).
const DCGMMetricsConfigMap = "gpu-node-pools-dcgm-metrics"

// DCGMMetricNames are the metric names the exporter emits with DCGMMetrics.
func DCGMMetricNames() []string {
	var out []string
	for _, line := range strings.Split(DCGMMetrics, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.TrimSpace(strings.SplitN(line, ",", 2)[0]))
	}
	return out
}
