package platform_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/internal/testkit/promtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// vllmMetrics is vLLM's Prometheus metric set (v1 engine, as documented in
// vLLM's metrics design doc); histograms also expose _bucket, _sum, _count.
var vllmMetrics = []string{
	"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
	"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total",
	"vllm:num_preemptions_total",
	"vllm:time_to_first_token_seconds", "vllm:time_per_output_token_seconds", "vllm:inter_token_latency_seconds",
	"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:request_inference_time_seconds",
	"vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds",
	"vllm:request_prompt_tokens", "vllm:request_generation_tokens",
}

// platformMetrics are the few series outside DCGM and vLLM that the rules
// and panels need: Prometheus's own scrape health and kube-state-metrics,
// both part of the cluster's existing monitoring stack.
var platformMetrics = []string{"up", "kube_node_status_capacity", "kube_pod_container_resource_requests"}

// vectorDBMetrics are the vector databases' series: CloudNativePG 1.30.0's
// exporter (pkg/management/postgres/webserver/metricserver/pg_collector.go
// for cnpg_collector_up; config/manager/default-monitoring.yaml, queries
// backends and pg_database, for the others) and Qdrant's /metrics
// (collections_vector_total, documented in Qdrant's monitoring guide).
var vectorDBMetrics = []string{"cnpg_collector_up", "cnpg_backends_total", "cnpg_pg_database_size_bytes", "collections_vector_total"}

// knownMetrics are the metrics the DCGM exporter emits with the metrics
// file the program gives it, and the vLLM and platform sets.
func knownMetrics(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	for _, m := range platform.DCGMMetricNames() {
		known[m] = true
	}
	if !known["DCGM_FI_DEV_GPU_UTIL"] || len(known) < 10 {
		t.Fatalf("the program's DCGM metrics look wrong: %v", known)
	}
	for _, m := range vllmMetrics {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			known[m+suffix] = true
		}
	}
	for _, m := range append(platformMetrics, vectorDBMetrics...) {
		known[m] = true
	}
	return known
}

// upstreamDefaultCounters reads the exporter's own default counters.
func upstreamDefaultCounters(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(pulumitest.SharedDir(t), "reference", "dcgm-exporter-default-counters.csv"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := platform.CSVFieldNames(string(raw))
	if err != nil || len(out) < 10 {
		t.Fatalf("default counters look wrong: %v %v", out, err)
	}
	return out
}

// The program's metrics file keeps every counter the exporter emits by
// default (the customer's dashboards may read any) and adds the XID count;
// every name in it is one the exporter knows (a DCGM field or its XID
// collector, internal/pkg/counters/const.go at 4.5.3-4.8.2).
func TestDCGMMetricsKeepTheDefaults(t *testing.T) {
	t.Parallel()
	ours, err := platform.CSVFieldNames(platform.DCGMMetrics)
	if err != nil {
		t.Fatalf("the exporter would refuse the program's metrics file: %v", err)
	}
	for _, m := range upstreamDefaultCounters(t) {
		if !slices.Contains(ours, m) {
			t.Errorf("the program's DCGM metrics drop the default counter %s", m)
		}
	}
	if !slices.Contains(ours, "DCGM_EXP_XID_ERRORS_COUNT") {
		t.Error("the XID alert needs DCGM_EXP_XID_ERRORS_COUNT enabled")
	}
	for _, m := range ours {
		if !strings.HasPrefix(m, "DCGM_FI_") && m != "DCGM_EXP_XID_ERRORS_COUNT" {
			t.Errorf("%s is no DCGM field and no exporter collector", m)
		}
	}
}

// checkQuery parses expr with the real PromQL parser and checks each metric
// it selects is known. It returns the metrics it found.
func checkQuery(t *testing.T, where, expr string, known map[string]bool) []string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", where, expr, err)
		return nil
	}
	var names []string
	for _, sel := range parser.ExtractSelectors(e) {
		for _, m := range sel {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				names = append(names, m.Value)
				if !known[m.Value] {
					t.Errorf("%s: metric %s is neither one the DCGM exporter emits with our metrics file nor a vLLM metric", where, m.Value)
				}
			}
		}
	}
	if len(names) == 0 {
		t.Errorf("%s: %q selects no metric by name", where, expr)
	}
	return names
}

func TestAlertRulesParseAndNameRealMetrics(t *testing.T) {
	t.Parallel()
	known := knownMetrics(t)
	rules := platform.AlertRules(platform.Spec{}.Defaults(platform.GPUOperator))
	want := map[string]string{
		"GPUIdle": "DCGM_FI_DEV_GPU_UTIL", "GPUMemoryNearOOM": "DCGM_FI_DEV_FB_FREE",
		"InferenceLatencyP99High": "vllm:e2e_request_latency_seconds_bucket", "GPUTemperatureHigh": "DCGM_FI_DEV_GPU_TEMP",
		"GPUXIDError": "DCGM_EXP_XID_ERRORS_COUNT", "DCGMExporterDown": "up", "GPUNodeWithoutExporter": "kube_node_status_capacity",
	}
	if len(rules) != len(want) {
		t.Fatalf("want %d rules, got %d", len(want), len(rules))
	}
	// Prometheus loads the PrometheusRule as a rule file
	if n := promtest.ParseRules(t, platform.PrometheusRule(platform.Spec{}.Defaults(platform.GPUOperator), "gpu")); n != len(rules) {
		t.Errorf("Prometheus loads %d rules of %d", n, len(rules))
	}
	for _, r := range rules {
		names := checkQuery(t, r.Alert, r.Expr, known)
		if !strings.Contains(strings.Join(names, " "), want[r.Alert]) {
			t.Errorf("%s uses %v, want %s", r.Alert, names, want[r.Alert])
		}
		for _, k := range []string{"summary", "description", "advice"} {
			if r.Annotations[k] == "" {
				t.Errorf("%s: no %s", r.Alert, k)
			}
		}
		if s := r.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("%s: severity %q", r.Alert, s)
		}
		if r.For != "" {
			if _, err := parser.NewParser(parser.Options{}).ParseExpr("x[" + r.For + "]"); err != nil {
				t.Errorf("%s: for %q is not a duration", r.Alert, r.For)
			}
		}
	}
}

// Thresholds and durations come from config.
func TestAlertThresholdsAreConfigurable(t *testing.T) {
	t.Parallel()
	s := platform.Spec{Alerts: platform.Alerts{IdleUtilizationPercent: 5, IdleFor: "1h", TemperatureCelsius: 80, LatencyP99Seconds: 2.5}}.Defaults(platform.DevicePlugin)
	got := map[string]platform.Rule{}
	for _, r := range platform.AlertRules(s) {
		got[r.Alert] = r
	}
	if !strings.HasSuffix(got["GPUIdle"].Expr, "< 5") || got["GPUIdle"].For != "1h" ||
		!strings.HasSuffix(got["GPUTemperatureHigh"].Expr, "> 80") || !strings.HasSuffix(got["InferenceLatencyP99High"].Expr, "> 2.5") {
		t.Errorf("thresholds not applied: %+v", got)
	}
	if !strings.HasSuffix(got["GPUMemoryNearOOM"].Expr, "> 95") {
		t.Errorf("default memory threshold: %s", got["GPUMemoryNearOOM"].Expr)
	}
}

func TestDashboards(t *testing.T) {
	t.Parallel()
	known := knownMetrics(t)
	uids := map[string]bool{}
	for _, d := range platform.Dashboards() {
		var model map[string]any
		if err := json.Unmarshal([]byte(d.JSON()), &model); err != nil {
			t.Fatalf("%s: invalid JSON: %v", d.UID, err)
		}
		if model["uid"] != d.UID || uids[d.UID] || !strings.HasPrefix(d.UID, "gnp-") {
			t.Errorf("uid %v not stable and unique", model["uid"])
		}
		uids[d.UID] = true
		vars := model["templating"].(map[string]any)["list"].([]any)
		if v := vars[0].(map[string]any); v["type"] != "datasource" || v["query"] != "prometheus" {
			t.Errorf("%s: first variable %v is not a Prometheus datasource", d.UID, v)
		}
		panels := model["panels"].([]any)
		if len(panels) < 7 {
			t.Errorf("%s: only %d panels", d.UID, len(panels))
		}
		for _, p := range panels {
			p := p.(map[string]any)
			if p["datasource"].(map[string]any)["uid"] != "${datasource}" {
				t.Errorf("%s/%s does not use the datasource variable", d.UID, p["title"])
			}
			for _, tg := range p["targets"].([]any) {
				checkQuery(t, d.UID+"/"+p["title"].(string), tg.(map[string]any)["expr"].(string), known)
			}
		}
	}
	// What the issue asks each dashboard to show, by the metric behind it.
	all := ""
	for _, d := range platform.Dashboards() {
		all += d.JSON()
	}
	for _, m := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
		"DCGM_FI_DEV_XID_ERRORS", "kube_pod_container_resource_requests", "count_over_time",
		"vllm:request_success_total", "vllm:e2e_request_latency_seconds_bucket", "vllm:time_to_first_token_seconds_bucket",
		"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:generation_tokens_total",
		"cnpg_collector_up", "cnpg_pg_database_size_bytes", "collections_vector_total"} {
		if !strings.Contains(all, m) {
			t.Errorf("no panel uses %s", m)
		}
	}
}

// The check must catch a metric that does not exist.
func TestMetricCheckRejectsUnknownMetric(t *testing.T) {
	t.Parallel()
	known := knownMetrics(t)
	if known["DCGM_FI_DEV_GPU_UTILIZATION"] || known["vllm:gpu_cache_usage_perc"] {
		t.Fatal("made-up or removed metrics must not be known")
	}
	if _, err := parser.NewParser(parser.Options{}).ParseExpr(`rate(DCGM_FI_DEV_GPU_UTIL[5m]`); err == nil {
		t.Fatal("the parser accepted a broken expression")
	}
}

// The metrics file is read as the exporter reads it
// (internal/pkg/counters/counter_config.go at 4.5.3-4.8.2): a record
// without exactly three fields makes it refuse the whole file.
func TestCSVFieldNamesAsTheExporterReads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, csv string
		want      []string
		refused   bool
	}{
		{"comments and spaces", "# c\nDCGM_FI_DEV_GPU_UTIL ,  gauge, util (in %).\n\n", []string{"DCGM_FI_DEV_GPU_UTIL"}, false},
		{"a quoted comma", `DCGM_FI_DEV_GPU_UTIL,gauge,"util, in %"`, []string{"DCGM_FI_DEV_GPU_UTIL"}, false},
		{"a quote after a space", `DCGM_FI_DEV_GPU_UTIL, gauge, "util, in %"`, nil, true},
		{"a comma in the help", "DCGM_FI_DEV_GPU_UTIL, gauge, util\nDCGM_EXP_XID_ERRORS_COUNT, counter, last window (5 min), by xid.", nil, true},
		{"two fields", "DCGM_FI_DEV_GPU_UTIL, gauge", nil, true},
	} {
		got, err := platform.CSVFieldNames(tc.csv)
		if (err != nil) != tc.refused || !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %v, refused %v", tc.name, got, err, tc.want, tc.refused)
		}
	}
}
