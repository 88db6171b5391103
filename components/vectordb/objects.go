package vectordb

import (
	"cmp"
	"fmt"
	"maps"
	"strings"

	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/monitoring"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/secret"
)

// PostgresImage ships the vector extension: CloudNativePG's "system"
// images are its "standard" images (PGAudit, failover slots, pgvector)
// plus the Barman Cloud binaries its in-core object-store backups run
// (cloudnative-pg/postgres-containers README, and the PostgreSQL 17 minor
// of Debian/ClusterImageCatalog-bookworm.yaml @ a949ae58, 2026-08-17),
// by the build's own tag: the plain 17.11-system-bookworm moves with every
// rebuild.
const PostgresImage = "ghcr.io/cloudnative-pg/postgresql:17.11-202608310816-system-bookworm"

// QdrantImage is the Qdrant chart's app version in its unprivileged
// build, which runs as a non-root user without the chart's chown init
// container (that one runs as root).
var QdrantChart = helm.Chart{Name: "qdrant", Version: "1.19.0", Repo: "https://qdrant.github.io/qdrant-helm",
	Images: []string{"docker.io/qdrant/qdrant"}}

// OperatorChart is CloudNativePG's operator (app 1.30.0), installed where
// the stack asks for it.
var OperatorChart = helm.Chart{Name: "cloudnative-pg", Version: "0.29.0", Repo: "https://cloudnative-pg.github.io/charts",
	Images: []string{"ghcr.io/cloudnative-pg/cloudnative-pg"}}

// OperatorNamespace is where the program installs the operator; a
// platform's own operator runs in the namespace the stack names.
const OperatorNamespace = "cnpg-system"

// Credential keys: CloudNativePG reads a kubernetes.io/basic-auth Secret;
// Qdrant's key is read from api-key.
const (
	UsernameKey = "username"
	PasswordKey = "password"
	APIKeyKey   = "api-key"
)

// CredentialsSecret names a database's credentials Secret (in its own
// namespace and in each client namespace).
func CredentialsSecret(name string) string { return name + "-credentials" }

// BackupSecret names the object-store keys of a pgvector's backups.
func BackupSecret(name string) string { return name + "-backup-store" }

// Store is where pgvector's backups go: the stack's storage.
type Store struct {
	// Destination is s3://bucket/path or an Azure Blob URL.
	Destination string
	// Endpoint is the S3 endpoint ("" for Azure).
	Endpoint string
	// Identity signs the pods in to Blob storage (workload identity).
	Identity kube.WorkloadIdentity
	// AccessKey and SecretKey are the S3 keys.
	AccessKey, SecretKey secret.Secret
}

// Keys of the S3 credentials Secret of a backup store.
const (
	AccessKeyKey = "ACCESS_KEY_ID"
	SecretKeyKey = "ACCESS_SECRET_KEY"
)

// CPUOnly is the node affinity of every vector-database pod: any node
// without the GPU label.
func CPUOnly() map[string]any { return gpupool.AvoidGPUNodes() }

func resources(s Spec) map[string]any {
	return map[string]any{
		"requests": map[string]any{"cpu": s.Resources.CPU, "memory": s.Resources.Memory},
		"limits":   map[string]any{"memory": s.Resources.MemoryLimit},
	}
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Cluster is a pgvector database: a CloudNativePG Cluster on the image
// with the vector extension, created in the application database after
// initdb, with its credentials, on CPU nodes only. Its volumes are left to
// CloudNativePG's own backups (Velero skips them); with a store it
// archives WAL and base backups there.
func Cluster(s Spec, store *Store) map[string]any {
	affinity := map[string]any{"nodeAffinity": CPUOnly(), "enablePodAntiAffinity": true, "topologyKey": "kubernetes.io/hostname"}
	if len(s.NodeSelector) > 0 {
		affinity["nodeSelector"] = toAny(s.NodeSelector)
	}
	storage := map[string]any{"size": s.Size}
	if s.StorageClass != "" {
		storage["storageClass"] = s.StorageClass
	}
	labels := map[string]any{kube.BackupExcludeLabel: "true", kube.ManagedByLabel: kube.ManagedBy}
	spec := map[string]any{
		"instances": s.Replicas,
		"imageName": s.Image,
		"storage":   storage,
		"resources": resources(s),
		"affinity":  affinity,
		"bootstrap": map[string]any{"initdb": map[string]any{
			"database": Database, "owner": Owner,
			"secret":                 map[string]any{"name": CredentialsSecret(s.Name)},
			"postInitApplicationSQL": []any{"CREATE EXTENSION IF NOT EXISTS vector"},
		}},
		"enableSuperuserAccess": false,
		"inheritedMetadata":     map[string]any{"labels": labels},
	}
	if store != nil {
		if store.Endpoint == "" { // Blob storage: the pods sign in with workload identity
			maps.Copy(labels, store.Identity.PodLabelValues())
			spec["serviceAccountTemplate"] = map[string]any{"metadata": map[string]any{
				"annotations": store.Identity.ServiceAccountAnnotationValues(),
			}}
		}
		objectStore := barmanStore(s, store)
		objectStore["serverName"] = cmp.Or(s.Archive, s.Name)
		objectStore["wal"] = map[string]any{"compression": "gzip"}
		objectStore["data"] = map[string]any{"compression": "gzip"}
		spec["backup"] = map[string]any{"barmanObjectStore": objectStore, "retentionPolicy": "30d"}
		if s.RestoreFrom != "" {
			origin := barmanStore(s, store)
			origin["serverName"] = s.RestoreFrom
			spec["externalClusters"] = []any{map[string]any{"name": RestoreSource, "barmanObjectStore": origin}}
			spec["bootstrap"] = map[string]any{"recovery": map[string]any{
				"source": RestoreSource, "database": Database, "owner": Owner,
				"secret": map[string]any{"name": CredentialsSecret(s.Name)},
			}}
		}
	}
	return map[string]any{
		"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
		// The database comes back from its own archive, never from a
		// Velero backup: a restored Cluster would run initdb again (its
		// volumes, which CloudNativePG makes, are not in the backup) and
		// then fail to archive into its old, non-empty archive.
		"metadata": map[string]any{"name": s.Name, "namespace": s.Namespace,
			"labels": map[string]any{kube.BackupExcludeLabel: "true"}},
		"spec": spec,
	}
}

// RestoreSource names the archive a restored database recovers from
// among its externalClusters.
const RestoreSource = "archive"

// barmanStore is where and how a database reaches its backup store: the
// path and the S3 keys, or Azure Blob through the pods' workload identity
// (which Cluster gives them), for its own archive and the one it restores
// from alike.
func barmanStore(s Spec, store *Store) map[string]any {
	objectStore := map[string]any{"destinationPath": store.Destination}
	if store.Endpoint == "" {
		objectStore["azureCredentials"] = map[string]any{"inheritFromAzureAD": true}
		return objectStore
	}
	objectStore["endpointURL"] = store.Endpoint
	objectStore["s3Credentials"] = map[string]any{
		"accessKeyId":     map[string]any{"name": BackupSecret(s.Name), "key": AccessKeyKey},
		"secretAccessKey": map[string]any{"name": BackupSecret(s.Name), "key": SecretKeyKey},
	}
	return objectStore
}

// ScheduledBackup is a pgvector's nightly base backup (CloudNativePG's
// schedule has six fields, seconds first).
func ScheduledBackup(s Spec) map[string]any {
	return map[string]any{
		"apiVersion": "postgresql.cnpg.io/v1", "kind": "ScheduledBackup",
		"metadata": map[string]any{"name": s.Name + "-nightly", "namespace": s.Namespace},
		"spec": map[string]any{
			"schedule": "0 0 2 * * *", "cluster": map[string]any{"name": s.Name},
			"backupOwnerReference": "self", "method": "barmanObjectStore",
		},
	}
}

// DatabaseLabel names the database on its Services (Monitor selects it).
const DatabaseLabel = "gpu-node-pools/vectordb"

// QdrantValues are the Qdrant chart's values: the unprivileged image, as
// a restricted pod, persistence and a snapshot volume of the same size,
// the API key from the credentials Secret, CPU nodes only.
func QdrantValues(s Spec) map[string]any {
	persistence := map[string]any{"size": s.Size}
	snapshots := map[string]any{"enabled": true, "size": s.Size}
	if s.StorageClass != "" {
		persistence["storageClassName"] = s.StorageClass
		snapshots["storageClassName"] = s.StorageClass
	}
	container := podsecurity.ContainerContext(true)
	container["runAsUser"], container["runAsGroup"] = 1000, 2000
	pod := podsecurity.PodContext()
	pod["runAsUser"], pod["runAsGroup"], pod["fsGroup"] = 1000, 2000, 3000
	values := map[string]any{
		"replicaCount":             s.Replicas,
		"service":                  map[string]any{"additionalLabels": map[string]any{DatabaseLabel: s.Name}},
		"image":                    map[string]any{"useUnprivilegedImage": true},
		"updateVolumeFsOwnership":  false,
		"persistence":              persistence,
		"snapshotPersistence":      snapshots,
		"resources":                resources(s),
		"containerSecurityContext": container,
		"podSecurityContext":       pod,
		"affinity":                 map[string]any{"nodeAffinity": CPUOnly()},
		"env": []any{map[string]any{"name": "QDRANT__SERVICE__API_KEY", "valueFrom": map[string]any{
			"secretKeyRef": map[string]any{"name": CredentialsSecret(s.Name), "key": APIKeyKey},
		}}},
	}
	if len(s.NodeSelector) > 0 {
		values["nodeSelector"] = toAny(s.NodeSelector)
	}
	return values
}

// NetworkPolicy admits to a database's pods only its clients' namespaces,
// the model-serving namespace, Prometheus (metrics) and, for pgvector,
// the CloudNativePG operator (it reads each instance's status port).
func NetworkPolicy(s Spec, servingNamespace, prometheusNamespace, operatorNamespace string) map[string]any {
	from := append([]string{servingNamespace}, s.Clients...)
	selector := map[string]any{"app.kubernetes.io/instance": QdrantRelease(s.Name)}
	if s.Kind == PGVector {
		selector = map[string]any{"cnpg.io/cluster": s.Name}
		from = append(from, operatorNamespace)
	}
	from = append(from, prometheusNamespace)
	peers := []any{}
	seen := map[string]bool{}
	for _, ns := range from {
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		peers = append(peers, map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}}})
	}
	// a replica talks to its peers (replication, Raft)
	peers = append(peers, map[string]any{"podSelector": map[string]any{"matchLabels": selector}})
	return map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
		"metadata": map[string]any{"name": s.Name + "-clients", "namespace": s.Namespace},
		"spec": map[string]any{
			"podSelector": map[string]any{"matchLabels": selector},
			"policyTypes": []any{"Ingress"},
			"ingress":     []any{map[string]any{"from": peers}},
		},
	}
}

// Describe is a database's one-line summary.
func (s Spec) Describe() string {
	return fmt.Sprintf("%s %s in %s (%d × %s)", s.Kind, s.Name, s.Namespace, s.Replicas, strings.TrimSpace(s.Size))
}

// Monitor scrapes a database into the cluster's Prometheus (labels are
// what its monitor selector wants): a PodMonitor of CloudNativePG's
// exporter port (metrics, 9187) for pgvector, a ServiceMonitor of Qdrant's
// /metrics for Qdrant, which signs in with the API key.
func Monitor(s Spec, labels map[string]string) map[string]any {
	if s.Kind == Qdrant {
		// by a label of the program's (not app.kubernetes.io/instance,
		// which Argo CD's label tracking rewrites), on the client Service
		// only: the headless one (component cluster-discovery) has the
		// same ports and would scrape every pod twice
		m := monitoring.ServiceMonitor(s.Name+"-metrics", s.Namespace, labels, map[string]string{DatabaseLabel: s.Name}, "http", "30s")
		m["spec"].(map[string]any)["selector"].(map[string]any)["matchExpressions"] = []any{
			map[string]any{"key": "app.kubernetes.io/component", "operator": "DoesNotExist"}}
		endpoint := m["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
		endpoint["authorization"] = map[string]any{"type": "Bearer", "credentials": map[string]any{"name": CredentialsSecret(s.Name), "key": APIKeyKey}}
		return m
	}
	return map[string]any{
		"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
		"metadata": map[string]any{"name": s.Name + "-metrics", "namespace": s.Namespace, "labels": kube.AnyMap(labels)},
		"spec": map[string]any{
			"selector":            map[string]any{"matchLabels": map[string]any{"cnpg.io/cluster": s.Name, "cnpg.io/podRole": "instance"}},
			"podMetricsEndpoints": []any{map[string]any{"port": "metrics", "interval": "30s"}},
		},
	}
}
