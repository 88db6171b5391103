package vectordb_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/monitoring"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/promtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

var (
	rag    = vectordb.Spec{Name: "rag", Size: "20Gi", Replicas: 2, Backup: "s3://backups/rag"}.Defaults()
	search = vectordb.Spec{Name: "search", Kind: vectordb.Qdrant, Size: "10Gi", Replicas: 3}.Defaults()
)

func alertNamed(t *testing.T, s vectordb.Spec, name string) monitoring.Rule {
	t.Helper()
	for _, r := range vectordb.AlertRules(s) {
		if r.Alert == name {
			return r
		}
	}
	t.Fatalf("%s has no alert %s", s.Name, name)
	return monitoring.Rule{}
}

// qdrantNames are the pod and claim names the real Qdrant chart's
// StatefulSet makes with the program's values: <sts>-<ordinal>, and
// <claim template>-<pod> for each claim template.
func qdrantNames(t *testing.T, s vectordb.Spec) (pods, claims []string) {
	t.Helper()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	for _, o := range helmtest.RenderRelease(t, charts, helm.Release{Name: vectordb.QdrantRelease(s.Name), Chart: vectordb.QdrantChart, Dir: charts,
		Values: vectordb.QdrantValues(s)}, s.Namespace) {
		if o["kind"] != "StatefulSet" {
			continue
		}
		sts := helmtest.Get(o, "metadata", "name").(string)
		for i := range s.Replicas {
			pod := fmt.Sprintf("%s-%d", sts, i)
			pods = append(pods, pod)
			for _, c := range helmtest.Get(o, "spec", "volumeClaimTemplates").([]any) {
				claims = append(claims, helmtest.Get(c, "metadata", "name").(string)+"-"+pod)
			}
		}
	}
	if len(pods) != s.Replicas || len(claims) != 2*s.Replicas {
		t.Fatalf("the chart made pods %v and claims %v", pods, claims)
	}
	return pods, claims
}

// series is one series per value: name{namespace, label=value} values.
func series(metric, label, namespace, values string, names ...string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s{namespace=%q, %s=%q} %s\n", metric, namespace, label, n, values)
	}
	return b.String()
}

// volumes are the kubelet's stats of claims: capacity and available
// bytes, in promtool's notation.
func volumes(capacity, available string, claims ...string) string {
	return series("kubelet_volume_stats_capacity_bytes", "persistentvolumeclaim", rag.Namespace, capacity, claims...) +
		series("kubelet_volume_stats_available_bytes", "persistentvolumeclaim", rag.Namespace, available, claims...)
}

// Each database's alerts, evaluated by Prometheus's own rule engine over
// series named as CloudNativePG and the real Qdrant chart name pods and
// claims: they fire when the condition has held for its duration, not for
// a healthy database, not for another database's pods or claims, and
// resolve when the condition is over.
func TestAlertsFireInPrometheus(t *testing.T) {
	t.Parallel()
	qPods, qClaims := qdrantNames(t, search)
	// CloudNativePG's instances and their pgdata claims: <cluster>-<serial>
	// from 1 (pkg/specs/pods.go GetInstanceName; claim named as the
	// instance, pkg/reconciler/persistentvolumeclaim/calculator.go, v1.30.0).
	ns := rag.Namespace
	for _, tc := range []struct {
		name    string
		spec    vectordb.Spec
		alert   string
		series  string
		minutes int
		fireAt  int // first firing minute; -1: never
		// resolvedBy: the alert no longer fires at this minute (0: not checked)
		resolvedBy int
		label      string // a label the firing alert carries, name=value (required when it fires)
	}{
		{"both instances report PostgreSQL down", rag, "PGVectorOffline",
			series("cnpg_collector_up", "pod", ns, "1x4 0x20", "rag-1", "rag-2"), 25, 10, 0, "vectordb=rag"},
		{"the instances are gone", rag, "PGVectorOffline",
			series("cnpg_collector_up", "pod", ns, "1x4 stale", "rag-1", "rag-2"), 25, 10, 0, "severity=critical"},
		{"one instance of two is up", rag, "PGVectorOffline",
			series("cnpg_collector_up", "pod", ns, "0x20", "rag-1") + series("cnpg_collector_up", "pod", ns, "1x20", "rag-2"), 20, -1, 0, ""},
		{"another database down, ours up", rag, "PGVectorOffline",
			series("cnpg_collector_up", "pod", ns, "0x20", "rag-archive-1") + series("cnpg_collector_up", "pod", "other", "0x20", "rag-1") +
				series("cnpg_collector_up", "pod", ns, "1x20", "rag-1"), 20, -1, 0, ""},
		{"an instance's exporter unreachable", rag, "PGVectorInstanceMetricsAbsent",
			series("up", "pod", ns, "1x20", "rag-1") + series("up", "pod", ns, "1x4 0x20", "rag-2"), 25, 15, 0, "pod=rag-2"},
		{"85 of 100 connections", rag, "PGVectorConnectionsHigh",
			`cnpg_backends_total{namespace="vector-dbs", pod="rag-1", datname="app", state="active"} 70x20
cnpg_backends_total{namespace="vector-dbs", pod="rag-1", datname="app", state="idle"} 15x20
cnpg_pg_settings_setting{namespace="vector-dbs", pod="rag-1", name="max_connections"} 100x20
cnpg_pg_settings_setting{namespace="vector-dbs", pod="rag-1", name="shared_buffers"} 16384x20
`, 20, 5, 0, "pod=rag-1"},
		{"50 of 100 connections", rag, "PGVectorConnectionsHigh",
			`cnpg_backends_total{namespace="vector-dbs", pod="rag-1", datname="app", state="active"} 50x20
cnpg_pg_settings_setting{namespace="vector-dbs", pod="rag-1", name="max_connections"} 100x20
`, 20, -1, 0, ""},
		// pg_stat_archiver's times as CloudNativePG exports them (-1
		// before the first failure): a failure at minute 5, archiving
		// works again at minute 15
		{"WAL archiving fails, then recovers", rag, "PGVectorWALArchiveFailing",
			series("cnpg_pg_stat_archiver_last_archived_time", "pod", ns, "1000x14 2000x10", "rag-1") +
				series("cnpg_pg_stat_archiver_last_failed_time", "pod", ns, "-1x4 1500x20", "rag-1"), 25, 6, 16, "pod=rag-1"},
		{"WAL archiving never fails", rag, "PGVectorWALArchiveFailing",
			series("cnpg_pg_stat_archiver_last_archived_time", "pod", ns, "1000+60x20", "rag-1") +
				series("cnpg_pg_stat_archiver_last_failed_time", "pod", ns, "-1x20", "rag-1"), 20, -1, 0, ""},
		{"pgdata 75% full", rag, "VectorDBDiskFilling",
			volumes("100x20", "50x20", "rag-1") + volumes("100x20", "25x20", "rag-2"), 20, 5, 0, "persistentvolumeclaim=rag-2"},
		{"pgdata 75% full is not almost full", rag, "VectorDBDiskAlmostFull",
			volumes("100x20", "25x20", "rag-1"), 20, -1, 0, ""},
		{"pgdata 95% full, then grown", rag, "VectorDBDiskAlmostFull",
			volumes("100x9 200x10", "5x9 105x10", "rag-1"), 20, 5, 10, "severity=critical"},
		{"another database's full claim", rag, "VectorDBDiskFilling",
			volumes("100x20", "1x20", "rag-archive-1", "qdrant-storage-qdrant-rag-0") + volumes("100x20", "90x20", "rag-1"), 20, -1, 0, ""},
		{"no Qdrant node answers", search, "QdrantOffline",
			series("up", "pod", ns, "1x4 0x20", qPods...), 25, 10, 0, "vectordb=search"},
		{"Qdrant's pods are gone", search, "QdrantOffline",
			series("up", "pod", ns, "1x4 stale", qPods...), 25, 10, 0, "vectordb=search"},
		{"one Qdrant node down", search, "QdrantOffline",
			series("up", "pod", ns, "1x20", qPods[1:]...) + series("up", "pod", ns, "0x20", qPods[0]), 20, -1, 0, ""},
		{"one Qdrant node down for 10 minutes", search, "QdrantNodeDown",
			series("up", "pod", ns, "1x20", qPods[1:]...) + series("up", "pod", ns, "1x4 0x20", qPods[0]), 25, 15, 0, "pod=" + qPods[0]},
		{"a Qdrant volume 92% full", search, "VectorDBDiskAlmostFull",
			volumes("100x20", "50x20", qClaims[:len(qClaims)-1]...) + volumes("100x20", "8x20", qClaims[len(qClaims)-1]), 20, 5, 0,
			"persistentvolumeclaim=" + qClaims[len(qClaims)-1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tl := promtest.EvalRule(t, alertNamed(t, tc.spec, tc.alert), tc.series, tc.minutes)
			if got := tl.FirstFiring(); got != tc.fireAt {
				t.Fatalf("%s first fires at minute %d, want %d (firing per minute: %v)", tc.alert, got, tc.fireAt, tl.Firing)
			}
			if tc.fireAt < 0 {
				return
			}
			if k, v, ok := strings.Cut(tc.label, "="); !ok || tl.Labels[tc.fireAt][k] != v {
				t.Errorf("the firing alert's labels %v, want %s", tl.Labels[tc.fireAt], tc.label)
			}
			if s := tl.Summary[tc.fireAt]; !strings.Contains(s, tc.spec.Name) {
				t.Errorf("summary %q does not name the database", s)
			}
			if tc.resolvedBy > 0 && tl.Firing[tc.resolvedBy] {
				t.Errorf("%s still fires at minute %d (firing per minute: %v)", tc.alert, tc.resolvedBy, tl.Firing)
			}
		})
	}
}

// Which alerts a database gets (WAL archiving only with a backup store),
// each with a severity, summary, description and advice, and Prometheus
// loads each database's PrometheusRule as a rule file.
func TestAlertSets(t *testing.T) {
	t.Parallel()
	noBackup := rag
	noBackup.Backup = ""
	for _, tc := range []struct {
		spec vectordb.Spec
		want string
	}{
		{rag, "PGVectorOffline PGVectorInstanceMetricsAbsent PGVectorConnectionsHigh PGVectorWALArchiveFailing VectorDBDiskFilling VectorDBDiskAlmostFull"},
		{noBackup, "PGVectorOffline PGVectorInstanceMetricsAbsent PGVectorConnectionsHigh VectorDBDiskFilling VectorDBDiskAlmostFull"},
		{search, "QdrantOffline QdrantNodeDown VectorDBDiskFilling VectorDBDiskAlmostFull"},
	} {
		var names []string
		for _, r := range vectordb.AlertRules(tc.spec) {
			names = append(names, r.Alert)
			for _, k := range []string{"summary", "description", "advice"} {
				if r.Annotations[k] == "" {
					t.Errorf("%s: no %s", r.Alert, k)
				}
			}
			if sev := r.Labels["severity"]; sev != "warning" && sev != "critical" {
				t.Errorf("%s: severity %q", r.Alert, sev)
			}
		}
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("%s (backup %q): alerts %s, want %s", tc.spec.Name, tc.spec.Backup, got, tc.want)
		}
		if n := promtest.ParseRules(t, vectordb.PrometheusRule(tc.spec, nil)); n != len(names) {
			t.Errorf("%s: Prometheus loads %d rules of %d", tc.spec.Name, n, len(names))
		}
	}
}

// cnpgMetrics are the series CloudNativePG's instances export: its default
// monitoring queries, read from the ConfigMap the real operator chart
// renders (the operator's config/manager/default-monitoring.yaml, v1.30.0),
// named cnpg_<query>_<column> for each GAUGE or COUNTER column
// (pkg/management/postgres/metrics/mappings.go ToMetricMap), with the
// query's LABEL columns as labels; and the collector's own cnpg_collector_up
// (pkg/management/postgres/webserver/metricserver/pg_collector.go).
func cnpgMetrics(t *testing.T) map[string]map[string]bool {
	t.Helper()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	var queries map[string]struct {
		Metrics []map[string]struct {
			Usage string `json:"usage"`
		} `json:"metrics"`
	}
	for _, o := range helmtest.RenderRelease(t, charts, vectordb.OperatorRelease(helm.Source{Dir: charts}), vectordb.OperatorNamespace) {
		if o["kind"] == "ConfigMap" && helmtest.Get(o, "data", "queries") != nil {
			if err := yaml.Unmarshal([]byte(helmtest.Get(o, "data", "queries").(string)), &queries); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := map[string]map[string]bool{"cnpg_collector_up": {}}
	for q, def := range queries {
		var metrics []string
		labels := map[string]bool{}
		for _, m := range def.Metrics {
			for column, c := range m {
				switch c.Usage {
				case "LABEL":
					labels[column] = true
				case "GAUGE", "COUNTER":
					metrics = append(metrics, "cnpg_"+q+"_"+column)
				}
			}
		}
		for _, m := range metrics {
			out[m] = labels
		}
	}
	if len(out) < 20 || out["cnpg_backends_total"] == nil || !out["cnpg_backends_total"]["datname"] {
		t.Fatalf("CloudNativePG's default queries look wrong: %v", out)
	}
	return out
}

// Every series an alert reads exists: CloudNativePG's from its default
// queries (with the labels the query sets), Prometheus's up, the
// kubelet's volume stats. Target labels (namespace, pod, claim) come from
// the scrape.
func TestAlertsReadSeriesThatExist(t *testing.T) {
	t.Parallel()
	known := cnpgMetrics(t)
	for _, m := range []string{"up", "kubelet_volume_stats_available_bytes", "kubelet_volume_stats_capacity_bytes"} {
		known[m] = map[string]bool{}
	}
	if known["cnpg_pg_stat_archiver_last_failed_time"] == nil || known["cnpg_backends_total"]["made_up"] {
		t.Fatal("the metric check cannot tell known from unknown")
	}
	target := map[string]bool{"namespace": true, "pod": true, "persistentvolumeclaim": true, labels.MetricName: true}
	for _, s := range []vectordb.Spec{rag, search} {
		for _, r := range vectordb.AlertRules(s) {
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("%s: %v", r.Alert, err)
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				vs, ok := n.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				have, ok := known[vs.Name]
				if !ok {
					t.Errorf("%s reads %s, which nothing exports", r.Alert, vs.Name)
				}
				for _, m := range vs.LabelMatchers {
					if !target[m.Name] && !have[m.Name] {
						t.Errorf("%s matches label %s of %s, which it does not carry", r.Alert, m.Name, vs.Name)
					}
				}
				return nil
			})
		}
	}
}
