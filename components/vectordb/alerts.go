package vectordb

import (
	"fmt"
	"regexp"

	"github.com/natron/gpu-node-pools/internal/monitoring"
)

// Disk thresholds, percent used of a database's volumes: CloudNativePG's
// own (cluster chart 0.8.1, CNPGClusterLowDiskSpaceWarning/Critical).
const (
	DiskWarnPercent     = 70
	DiskCriticalPercent = 90
)

// ConnectionsPercent is the share of max_connections that warns
// (cluster chart 0.8.1, CNPGClusterHighConnectionsWarning).
const ConnectionsPercent = 80

// PodPattern matches the database's pods by name: CloudNativePG's
// instances are <cluster>-<serial> (pkg/specs/pods.go GetInstanceName at
// v1.30.0), Qdrant's the StatefulSet's <release>-<ordinal>.
func (s Spec) PodPattern() string {
	if s.Kind == Qdrant {
		return regexp.QuoteMeta(QdrantRelease(s.Name)) + `-[0-9]+`
	}
	return regexp.QuoteMeta(s.Name) + `-[0-9]+`
}

// ClaimPattern matches the database's volume claims: an instance's pgdata
// claim is named as the instance (pkg/reconciler/persistentvolumeclaim/
// calculator.go at v1.30.0; no WAL volume or tablespaces here), Qdrant's
// are the chart's claim templates, storage and snapshots, per pod.
func (s Spec) ClaimPattern() string {
	if s.Kind == Qdrant {
		return `qdrant-(storage|snapshots)-` + s.PodPattern()
	}
	return s.PodPattern()
}

// AlertRules are a database's alerts, scoped to its namespace and its own
// pods and claims, labelled with its name. pgvector's follow
// CloudNativePG's rules (the cluster chart 0.8.1's prometheus_rules, and
// LastFailedArchiveTime of docs/src/samples/monitoring/prometheusrule.yaml
// at v1.30.0) on the metrics of its default monitoring queries; Qdrant's
// read Prometheus's scrape health.
func AlertRules(s Spec) []monitoring.Rule {
	pods := fmt.Sprintf(`namespace=%q, pod=~%q`, s.Namespace, s.PodPattern())
	claims := fmt.Sprintf(`namespace=%q, persistentvolumeclaim=~%q`, s.Namespace, s.ClaimPattern())
	rule := func(name, expr, forDur, severity, summary, description, advice string) monitoring.Rule {
		return monitoring.Rule{Alert: name, Expr: expr, For: forDur,
			Labels:      map[string]string{"severity": severity, "component": "vectordb", "vectordb": s.Name},
			Annotations: map[string]string{"summary": summary, "description": description, "advice": advice}}
	}
	where := fmt.Sprintf("%s %s in %s", s.Kind, s.Name, s.Namespace)
	// Per claim, where CloudNativePG's rule takes the max over all claims,
	// so that the alert names the volume that fills.
	used := fmt.Sprintf(`max by (namespace, persistentvolumeclaim) (1 - kubelet_volume_stats_available_bytes{%[1]s} / kubelet_volume_stats_capacity_bytes{%[1]s}) * 100`, claims)
	grow := "Raise the database's size in the stack (the claims grow in place where the storage class allows expansion), or remove data; check the estimate of vectors and dimensions against size."
	var rules []monitoring.Rule
	if s.Kind == Qdrant {
		rules = append(rules,
			// No target up, or none left to scrape: or on() vector(0)
			// keeps the alert alive when the pods are gone.
			rule("QdrantOffline", fmt.Sprintf(`(sum(up{%s}) or on() vector(0)) == 0`, pods), "5m", "critical",
				"Vector database "+s.Name+" has no running node",
				"No Qdrant node of "+where+" has answered Prometheus for 5 minutes: its clients cannot search.",
				"kubectl -n "+s.Namespace+" get pods -l app.kubernetes.io/instance="+QdrantRelease(s.Name)+"; check the pods' events and logs, and the volumes' claims."),
			rule("QdrantNodeDown", fmt.Sprintf(`up{%s} == 0`, pods), "10m", "warning",
				"Qdrant node {{ $labels.pod }} of "+s.Name+" is down",
				"Prometheus has not reached {{ $labels.pod }} of "+where+" for 10 minutes: shards on it are unavailable or served by fewer replicas.",
				"Check the pod's events and logs; a node that restarts in a loop often ran out of memory (raise resources.memory)."),
		)
	} else {
		rules = append(rules,
			// CNPGClusterOffline counts the collectors' series; a
			// collector that reports PostgreSQL down (0) counts as down
			// here too.
			rule("PGVectorOffline", fmt.Sprintf(`(sum(cnpg_collector_up{%s}) or on() vector(0)) == 0`, pods), "5m", "critical",
				"Vector database "+s.Name+" has no running instance",
				"No PostgreSQL instance of "+where+" has been up for 5 minutes: its clients cannot reach the database.",
				"kubectl -n "+s.Namespace+" get clusters.postgresql.cnpg.io "+s.Name+" and its pods (cnpg.io/cluster="+s.Name+"); the operator's logs say why an instance does not start."),
			rule("PGVectorInstanceMetricsAbsent", fmt.Sprintf(`up{%s} == 0`, pods), "10m", "critical",
				"pgvector instance {{ $labels.pod }} of "+s.Name+" cannot be scraped",
				"Prometheus has not reached the exporter of {{ $labels.pod }} ("+where+") for 10 minutes: the other alerts of this database cannot fire for it.",
				"Check the instance directly (kubectl -n "+s.Namespace+" logs {{ $labels.pod }}); a hung exporter has come with a frozen standby before."),
			rule("PGVectorConnectionsHigh",
				fmt.Sprintf(`sum by (namespace, pod) (cnpg_backends_total{%[1]s}) / max by (namespace, pod) (cnpg_pg_settings_setting{name="max_connections", %[1]s}) * 100 > %[2]d`, pods, ConnectionsPercent),
				"5m", "warning",
				"pgvector instance {{ $labels.pod }} of "+s.Name+" nears its connection limit",
				fmt.Sprintf("{{ $labels.pod }} uses {{ $value | humanize }}%% of max_connections (above %d%%).", ConnectionsPercent),
				"Pool the clients' connections (a CloudNativePG Pooler, or the client's own pool), or raise max_connections in the Cluster's postgresql parameters."),
		)
		if s.Backup != "" {
			rules = append(rules, rule("PGVectorWALArchiveFailing",
				fmt.Sprintf(`(cnpg_pg_stat_archiver_last_failed_time{%[1]s} - cnpg_pg_stat_archiver_last_archived_time{%[1]s}) > 1`, pods),
				"1m", "warning",
				"pgvector "+s.Name+" cannot archive WAL",
				"The last WAL archiving of {{ $labels.pod }} ("+where+") failed after the last success: point-in-time recovery stops at the last archived segment, and WAL piles up on the volume.",
				"Check the backup store and its credentials (Secret "+BackupSecret(s.Name)+"), and the instance's log for barman-cloud-wal-archive errors."))
		}
	}
	return append(rules,
		rule("VectorDBDiskFilling", fmt.Sprintf(`%s > %d`, used, DiskWarnPercent), "5m", "warning",
			"Volume {{ $labels.persistentvolumeclaim }} of "+s.Name+" is filling up",
			fmt.Sprintf("{{ $labels.persistentvolumeclaim }} (%s) is {{ $value | humanize }}%% full, above %d%%.", where, DiskWarnPercent), grow),
		rule("VectorDBDiskAlmostFull", fmt.Sprintf(`%s > %d`, used, DiskCriticalPercent), "5m", "critical",
			"Volume {{ $labels.persistentvolumeclaim }} of "+s.Name+" is almost full",
			fmt.Sprintf("{{ $labels.persistentvolumeclaim }} (%s) is {{ $value | humanize }}%% full, above %d%%: writes fail when it is full.", where, DiskCriticalPercent), grow),
	)
}

// PrometheusRule holds a database's alerts in its namespace; labels are
// what Prometheus's ruleSelector wants.
func PrometheusRule(s Spec, labels map[string]string) map[string]any {
	return monitoring.PrometheusRule(s.Name+"-alerts", s.Namespace, labels, "gpu-node-pools.vectordb."+s.Name, AlertRules(s))
}
