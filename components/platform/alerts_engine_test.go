package platform_test

import (
	"strconv"
	"testing"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/internal/testkit/promtest"
)

func ruleNamed(t *testing.T, name string) platform.Rule {
	t.Helper()
	for _, r := range platform.AlertRules(platform.Spec{}.Defaults(platform.GPUOperator)) {
		if r.Alert == name {
			return r
		}
	}
	t.Fatalf("no alert %s", name)
	return platform.Rule{}
}

// Series as the DCGM exporter exposes them (its job, the node label our
// ServiceMonitor adds, the gpu and modelName labels it sets).
const gpu0 = `job="dcgm-exporter", node="gpu-node-1", gpu="0", modelName="NVIDIA H100 80GB HBM3"`

// Every alert, evaluated by Prometheus's own rule engine (promql and
// rules at v0.314.0) over synthetic series: it fires when the condition has
// held for its duration, not before, not for a healthy GPU, and the XID
// alert resolves once the error is over.
func TestAlertsFireInPrometheus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, alert, series string
		minutes             int
		fireAt              int // first firing minute; -1: never
		resolvedBy          int // the alert is not firing at this minute (0: not checked)
		summary             string
	}{
		{"an idle GPU fires after 30 min", "GPUIdle", `DCGM_FI_DEV_GPU_UTIL{` + gpu0 + `} 5+0x60`, 60, 30, 0, "GPU 0 on gpu-node-1 is idle"},
		{"a busy GPU never", "GPUIdle", `DCGM_FI_DEV_GPU_UTIL{` + gpu0 + `} 50+0x60`, 60, -1, 0, ""},
		{"a GPU busy again resolves", "GPUIdle", `DCGM_FI_DEV_GPU_UTIL{` + gpu0 + `} 5+0x40 80+0x20`, 60, 30, 45, "GPU 0 on gpu-node-1 is idle"},
		{"framebuffer above 95% fires after 5 min", "GPUMemoryNearOOM",
			`DCGM_FI_DEV_FB_USED{` + gpu0 + `} 79000+0x20
  DCGM_FI_DEV_FB_FREE{` + gpu0 + `} 1000+0x20`, 20, 5, 0, "GPU 0 on gpu-node-1 is almost out of memory"},
		{"framebuffer at half never", "GPUMemoryNearOOM",
			`DCGM_FI_DEV_FB_USED{` + gpu0 + `} 40000+0x20
  DCGM_FI_DEV_FB_FREE{` + gpu0 + `} 40000+0x20`, 20, -1, 0, ""},
		// 100 requests a minute, 5% of them slower than 10 s: p99 is above
		// 10 s from minute 1 (rate needs two samples), firing 10 min later
		{"p99 above 10 s from the histogram fires after 10 min", "InferenceLatencyP99High", vllmLatency(95, 100), 30, 11, 0, "p99 latency of /models/llama3-8b is high"},
		// 0.5% slower than 10 s: p99 is below 10 s
		{"p99 below 10 s never", "InferenceLatencyP99High", vllmLatency(995, 1000), 30, -1, 0, ""},
		{"hot GPU fires after 5 min", "GPUTemperatureHigh", `DCGM_FI_DEV_GPU_TEMP{` + gpu0 + `} 91+0x20`, 20, 5, 0, "GPU 0 on gpu-node-1 runs hot"},
		{"warm GPU never", "GPUTemperatureHigh", `DCGM_FI_DEV_GPU_TEMP{` + gpu0 + `} 70+0x20`, 20, -1, 0, ""},
		// The exporter as it behaves (collector/xid_collector.go and
		// expcollector.go at 4.5.3-4.8.2): the last-XID gauge keeps 79 for
		// good after the error at minute 10; the XID count has a series
		// for xid 79 while the error is in its 5-minute window, else a zero
		// series without the xid label.
		{"an XID fires at once and resolves when its window passes", "GPUXIDError",
			`DCGM_FI_DEV_XID_ERRORS{` + gpu0 + `} 0x9 79x30
  DCGM_EXP_XID_ERRORS_COUNT{` + gpu0 + `, window_size_in_ms="300000"} 0x9 _x5 0x25
  DCGM_EXP_XID_ERRORS_COUNT{` + gpu0 + `, window_size_in_ms="300000", xid="79"} _x10 1x4 stale`, 40, 10, 20, "GPU 0 on gpu-node-1 reported XID 79"},
		{"no XID never", "GPUXIDError",
			`DCGM_FI_DEV_XID_ERRORS{` + gpu0 + `} 0x40
  DCGM_EXP_XID_ERRORS_COUNT{` + gpu0 + `, window_size_in_ms="300000"} 0x40`, 40, -1, 0, ""},
		{"exporter down fires after 10 min", "DCGMExporterDown", `up{job="dcgm-exporter", node="gpu-node-1"} 1x4 0x30`, 30, 15, 0, "DCGM exporter on gpu-node-1 is down"},
		{"exporter up never", "DCGMExporterDown", `up{job="dcgm-exporter", node="gpu-node-1"} 1x30`, 30, -1, 0, ""},
		{"a GPU node without exporter fires after 10 min", "GPUNodeWithoutExporter",
			`kube_node_status_capacity{node="gpu-node-1", resource="nvidia_com_gpu"} 8x30
  kube_node_status_capacity{node="gpu-node-2", resource="nvidia_com_gpu"} 8x30
  up{job="dcgm-exporter", node="gpu-node-1"} 1x30`, 30, 10, 0, "GPU node gpu-node-2 has no DCGM exporter"},
		{"every GPU node with an exporter never", "GPUNodeWithoutExporter",
			`kube_node_status_capacity{node="gpu-node-1", resource="nvidia_com_gpu"} 8x30
  up{job="dcgm-exporter", node="gpu-node-1"} 1x30`, 30, -1, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tl := promtest.EvalRule(t, ruleNamed(t, tc.alert), tc.series, tc.minutes)
			if got := tl.FirstFiring(); got != tc.fireAt {
				t.Fatalf("%s first fires at minute %d, want %d (firing per minute: %v)", tc.alert, got, tc.fireAt, tl.Firing)
			}
			if tc.fireAt >= 0 && tl.Summary[tc.fireAt] != tc.summary {
				t.Errorf("summary %q, want %q", tl.Summary[tc.fireAt], tc.summary)
			}
			if tc.resolvedBy > 0 && tl.Firing[tc.resolvedBy] {
				t.Errorf("%s still fires at minute %d (firing per minute: %v)", tc.alert, tc.resolvedBy, tl.Firing)
			}
		})
	}
}

// vllmLatency is vLLM's e2e latency histogram for one model: per minute,
// total requests of which fast finished within 10 s, the rest in 30 s.
func vllmLatency(fast, total int) string {
	sel := func(le string) string {
		return `vllm:e2e_request_latency_seconds_bucket{namespace="models", model_name="/models/llama3-8b", le="` + le + `"}`
	}
	return sel("1") + " 0+0x30\n  " +
		sel("10") + " 0+" + strconv.Itoa(fast) + "x30\n  " +
		sel("30") + " 0+" + strconv.Itoa(total) + "x30\n  " +
		sel("+Inf") + " 0+" + strconv.Itoa(total) + "x30"
}

// The vector-database row's queries, evaluated by Prometheus's engine over
// synthetic series: the database size is the application database's
// only, connections add up by state, Qdrant's vectors add up per pod.
func TestVectorDBPanelsInPrometheus(t *testing.T) {
	t.Parallel()
	storage := promtest.Storage(t, `cnpg_pg_database_size_bytes{namespace="vector-dbs",pod="rag-1",datname="app"} 2000x5
cnpg_pg_database_size_bytes{namespace="vector-dbs",pod="rag-1",datname="postgres"} 9000x5
cnpg_backends_total{namespace="vector-dbs",pod="rag-1",datname="app",usename="app",application_name="a",state="active"} 3x5
cnpg_backends_total{namespace="vector-dbs",pod="rag-1",datname="app",usename="app",application_name="b",state="active"} 2x5
cnpg_backends_total{namespace="vector-dbs",pod="rag-1",datname="postgres",usename="postgres",application_name="c",state="active"} 7x5
collections_vector_total{namespace="vector-dbs",pod="qdrant-search-0",id="docs"} 100x5
collections_vector_total{namespace="vector-dbs",pod="qdrant-search-0",id="faq"} 50x5
`)
	for panel, want := range map[string]float64{"pgvector size": 2000, "pgvector connections": 5, "qdrant vectors": 150} {
		if got := promtest.Instant(t, storage, platform.VectorDBPanelQueries[panel], 4); got != want {
			t.Errorf("%s: %v, want %v", panel, got, want)
		}
	}
}
