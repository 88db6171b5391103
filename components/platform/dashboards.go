package platform

import (
	"encoding/json"
	"fmt"
)

// How Grafana's dashboard sidecar (k8s-sidecar) finds our dashboards: it
// loads ConfigMaps labelled DashboardLabel=DashboardLabelValue (the
// kube-prometheus-stack defaults) and, when its folderAnnotation is set to
// FolderAnnotation, files each into the folder the annotation names.
const (
	DashboardLabel      = "grafana_dashboard"
	DashboardLabelValue = "1"
	FolderAnnotation    = "grafana_folder"
)

// Dashboard is a Grafana dashboard written by this program.
type Dashboard struct {
	UID    string
	Title  string
	File   string
	Panels []Panel
}

// Panel is one panel; every query is PromQL against the chosen datasource.
type Panel struct {
	Title   string
	Type    string // timeseries or stat
	Unit    string
	Queries []Query
	// Logs is a LogQL stream selector for the series a reader clicks
	// (Grafana's ${__field.labels.<label>} of the clicked series): the
	// panel links to those logs in the Loki datasource, whose streams
	// carry the labels the log collector sets (logging.Config).
	Logs string
}

// The log selectors the panels link to.
const (
	nodeLogs  = `{node="${__field.labels.node}"}`
	modelLogs = `{pod=~"vllm-${__field.labels.model_name}-.*"}`
	podLogs   = `{namespace="${__field.labels.namespace}", pod="${__field.labels.pod}"}`
)

// exploreURL opens Grafana's Explore on the Loki datasource variable with
// a LogQL query over the dashboard's time range. Grafana interpolates the
// ${...} variables before it follows the link.
func exploreURL(selector string) string {
	pane := map[string]any{"logs": map[string]any{
		"datasource": "${loki}",
		"queries":    []any{map[string]any{"refId": "A", "expr": selector, "datasource": map[string]any{"type": "loki", "uid": "${loki}"}}},
		"range":      map[string]any{"from": "${__from}", "to": "${__to}"},
	}}
	b, _ := json.Marshal(pane) // plain maps: cannot fail
	return "/explore?schemaVersion=1&panes=" + string(b)
}

// Query is one panel target.
type Query struct {
	Expr   string
	Legend string
}

const gpuSel = `{job=~".*dcgm-exporter.*"}`

func quantiles(metric string, qs ...string) []Query {
	out := make([]Query, len(qs))
	for i, q := range qs {
		out[i] = Query{
			Expr:   fmt.Sprintf(`histogram_quantile(%s, sum by (le, model_name) (rate(%s[5m])))`, q, metric),
			Legend: "p" + q[2:] + " {{model_name}}",
		}
	}
	return out
}

// Dashboards are the "GPU fleet" and "Model serving" dashboards.
func Dashboards() []Dashboard {
	return []Dashboard{
		{
			UID: "gnp-gpu-fleet", Title: "GPU fleet", File: "gpu-fleet.json",
			Panels: []Panel{
				{Title: "GPU utilization", Type: "timeseries", Unit: "percent", Queries: []Query{{
					Expr: `avg by (node, gpu) (DCGM_FI_DEV_GPU_UTIL` + gpuSel + `)`, Legend: "{{node}} GPU {{gpu}}"}}, Logs: nodeLogs},
				{Title: "Framebuffer used", Type: "timeseries", Unit: "percent", Queries: []Query{{
					Expr:   `max by (node, gpu) (DCGM_FI_DEV_FB_USED` + gpuSel + ` / (DCGM_FI_DEV_FB_USED` + gpuSel + ` + DCGM_FI_DEV_FB_FREE` + gpuSel + `)) * 100`,
					Legend: "{{node}} GPU {{gpu}}"}}, Logs: nodeLogs},
				{Title: "GPU temperature", Type: "timeseries", Unit: "celsius", Queries: []Query{{
					Expr: `max by (node, gpu) (DCGM_FI_DEV_GPU_TEMP` + gpuSel + `)`, Legend: "{{node}} GPU {{gpu}}"}}},
				{Title: "GPU power", Type: "timeseries", Unit: "watt", Queries: []Query{{
					Expr: `sum by (node, gpu) (DCGM_FI_DEV_POWER_USAGE` + gpuSel + `)`, Legend: "{{node}} GPU {{gpu}}"}}},
				{Title: "XID errors (last XID per GPU)", Type: "timeseries", Unit: "none", Queries: []Query{{
					Expr: `max by (node, gpu) (DCGM_FI_DEV_XID_ERRORS` + gpuSel + `)`, Legend: "{{node}} GPU {{gpu}}"}}, Logs: nodeLogs},
				{Title: "GPUs allocated per namespace", Type: "timeseries", Unit: "none", Queries: []Query{{
					Expr: `sum by (namespace) (kube_pod_container_resource_requests{resource="nvidia_com_gpu"})`, Legend: "{{namespace}}"}}},
				{Title: "GPUs allocated per pod", Type: "timeseries", Unit: "none", Queries: []Query{{
					Expr: `sum by (namespace, pod) (kube_pod_container_resource_requests{resource="nvidia_com_gpu"})`, Legend: "{{namespace}}/{{pod}}"}}, Logs: podLogs},
				{Title: "Idle GPU-hours, last 24h (utilization below 10%)", Type: "stat", Unit: "h", Queries: []Query{{
					Expr: `sum(count_over_time((DCGM_FI_DEV_GPU_UTIL` + gpuSel + ` < 10)[24h:5m])) / 12`, Legend: "idle GPU-hours"}}},
			},
		},
		{
			UID: "gnp-model-serving", Title: "Model serving", File: "model-serving.json",
			Panels: []Panel{
				{Title: "Request rate", Type: "timeseries", Unit: "reqps", Queries: []Query{{
					Expr: `sum by (model_name) (rate(vllm:request_success_total[5m]))`, Legend: "{{model_name}}"}}, Logs: modelLogs},
				{Title: "End-to-end latency", Type: "timeseries", Unit: "s", Queries: quantiles("vllm:e2e_request_latency_seconds_bucket", "0.50", "0.95", "0.99"), Logs: modelLogs},
				{Title: "Time to first token", Type: "timeseries", Unit: "s", Queries: quantiles("vllm:time_to_first_token_seconds_bucket", "0.50", "0.95", "0.99")},
				{Title: "Queue depth (waiting requests)", Type: "timeseries", Unit: "none", Queries: []Query{{
					Expr: `sum by (model_name) (vllm:num_requests_waiting)`, Legend: "{{model_name}}"}}, Logs: modelLogs},
				{Title: "Running requests", Type: "timeseries", Unit: "none", Queries: []Query{{
					Expr: `sum by (model_name) (vllm:num_requests_running)`, Legend: "{{model_name}}"}}},
				{Title: "KV-cache usage", Type: "timeseries", Unit: "percent", Queries: []Query{{
					Expr: `max by (model_name, pod) (vllm:kv_cache_usage_perc) * 100`, Legend: "{{model_name}} {{pod}}"}}},
				{Title: "Generated tokens per second", Type: "timeseries", Unit: "none", Queries: []Query{{
					Expr: `sum by (model_name) (rate(vllm:generation_tokens_total[5m]))`, Legend: "{{model_name}}"}}},
				// the RAG pipelines' vector databases (vectorDBs), on CPU nodes
				{Title: "Vector databases: pgvector instances up", Type: "timeseries", Unit: "none", Queries: []Query{{
					Expr: VectorDBPanelQueries["pgvector up"], Legend: "{{namespace}}/{{pod}}"}}, Logs: podLogs},
				{Title: "Vector databases: pgvector connections", Type: "timeseries", Unit: "none", Queries: []Query{{
					Expr: VectorDBPanelQueries["pgvector connections"], Legend: "{{namespace}}/{{pod}} {{state}}"}}},
				{Title: "Vector databases: pgvector database size", Type: "timeseries", Unit: "bytes", Queries: []Query{{
					Expr: VectorDBPanelQueries["pgvector size"], Legend: "{{namespace}}/{{pod}}"}}},
				{Title: "Vector databases: Qdrant vectors", Type: "timeseries", Unit: "none", Queries: []Query{{
					Expr: VectorDBPanelQueries["qdrant vectors"], Legend: "{{namespace}}/{{pod}}"}}, Logs: podLogs},
			},
		},
	}
}

// JSON renders the dashboard model Grafana imports: a stable UID, a
// Prometheus datasource variable every panel uses, two panels per row.
func (d Dashboard) JSON() string {
	ds := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	panels := make([]any, len(d.Panels))
	for i, p := range d.Panels {
		targets := make([]any, len(p.Queries))
		for j, q := range p.Queries {
			targets[j] = map[string]any{"refId": string(rune('A' + j)), "expr": q.Expr, "legendFormat": q.Legend, "datasource": ds}
		}
		panels[i] = map[string]any{
			"id":         i + 1,
			"type":       p.Type,
			"title":      p.Title,
			"datasource": ds,
			"gridPos":    map[string]any{"h": 8, "w": 12, "x": (i % 2) * 12, "y": (i / 2) * 8},
			"fieldConfig": map[string]any{
				"defaults":  map[string]any{"unit": p.Unit},
				"overrides": []any{},
			},
			"targets": targets,
		}
		if p.Logs != "" {
			defaults := panels[i].(map[string]any)["fieldConfig"].(map[string]any)["defaults"].(map[string]any)
			defaults["links"] = []any{map[string]any{"title": "Logs in Loki", "url": exploreURL(p.Logs)}}
		}
	}
	model := map[string]any{
		"uid":           d.UID,
		"title":         d.Title,
		"tags":          []any{"gpu-node-pools", "gpu"},
		"editable":      true,
		"schemaVersion": 39,
		"version":       1,
		"refresh":       "30s",
		"time":          map[string]any{"from": "now-6h", "to": "now"},
		"templating": map[string]any{"list": []any{map[string]any{
			"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
		}, map[string]any{
			// where the panels' "Logs in Loki" links look
			"name": "loki", "label": "Logs", "type": "datasource", "query": "loki",
		}}},
		"panels": panels,
	}
	b, _ := json.MarshalIndent(model, "", "  ") // plain maps: cannot fail
	return string(b)
}

// VectorDBPanelQueries are the serving dashboard's vector-database row:
// CloudNativePG's exporter (cnpg_collector_up; cnpg_backends_total and
// cnpg_pg_database_size_bytes from its default queries, v1.30.0) for the
// application database, and Qdrant's own /metrics.
var VectorDBPanelQueries = map[string]string{
	"pgvector up":          `max by (namespace, pod) (cnpg_collector_up)`,
	"pgvector connections": `sum by (namespace, pod, state) (cnpg_backends_total{datname="app"})`,
	"pgvector size":        `max by (namespace, pod) (cnpg_pg_database_size_bytes{datname="app"})`,
	"qdrant vectors":       `sum by (namespace, pod) (collections_vector_total)`,
}
