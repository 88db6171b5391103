package platform

import (
	_ "embed"
	"encoding/csv"
	"fmt"
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

// DCGMMetricNames are the metric names the exporter emits with DCGMMetrics
// (none if the file is malformed, which TestDCGMMetricsKeepTheDefaults
// would show).
func DCGMMetricNames() []string {
	names, _ := CSVFieldNames(DCGMMetrics)
	return names
}

// CSVFieldNames are the field names of a DCGM exporter metrics file, read
// as the exporter reads it (dcgm-exporter 4.5.3-4.8.2
// internal/pkg/counters/counter_config.go, ReadCSVFile and
// ExtractCounters): CSV with # comments, each record trimmed of spaces and
// exactly three fields, else the exporter refuses the whole file.
func CSVFieldNames(text string) ([]string, error) {
	r := csv.NewReader(strings.NewReader(text))
	r.Comment = '#'
	records, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	var out []string
	for i, rec := range records {
		if len(rec) != 3 {
			return nil, fmt.Errorf("malformed CSV record %d (%v): expected 3 fields", i, rec)
		}
		out = append(out, strings.Trim(rec[0], " "))
	}
	return out, nil
}
