package vectordb_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/testkit/fieldtest"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

func path() *field.Path { return field.NewPath("vectorDBs").Index(0) }

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		spec vectordb.Spec
		want []string
	}{
		{"unknown kind, client not a DNS label", vectordb.Spec{Name: "rag", Kind: "milvus", Size: "10Gi", Clients: []string{"RAG_App"}},
			[]string{`vectorDBs[0].kind: Unsupported value: "milvus"`, `vectorDBs[0].clients[0]: Invalid value: "RAG_App": must be a namespace name`}},
		{"no size", vectordb.Spec{Name: "rag"}, []string{`vectorDBs[0].size: Invalid value: "": required`}},
		{"does not fit its size", vectordb.Spec{Name: "rag", Size: "5Gi", Dimensions: 1024, Vectors: 1_000_000},
			[]string{`vectorDBs[0].size: Invalid value: "5Gi": holds 5.0 GiB, but 1000000 vectors of 1024 dimensions need 5.7 GiB (vectors × dimensions × 4 bytes × 1.5 index overhead): set size to at least 6Gi`}},
		{"GPU label", vectordb.Spec{Name: "rag", Size: "10Gi", NodeSelector: map[string]string{gpupool.LabelGPUPresent: "true"}},
			[]string{`vectorDBs[0].nodeSelector[nvidia.com/gpu.present]: Invalid value: "true": selects GPU nodes`}},
		{"qdrant with a password, backup", vectordb.Spec{Name: "search", Kind: vectordb.Qdrant, Size: "10Gi", Password: "pw", Backup: "s3://b/p"},
			[]string{`vectorDBs[0].backup: Forbidden: pgvector's`, `vectorDBs[0].password: Forbidden: pgvector's; Qdrant takes apiKey`}},
		{"bad quantities", vectordb.Spec{Name: "rag", Size: "10Gi", Resources: vectordb.Resources{CPU: "lots"}}, []string{`vectorDBs[0].resources.cpu: Invalid value: "lots"`}},
		{"valid pgvector", vectordb.Spec{Name: "rag", Size: "20Gi", Dimensions: 1024, Vectors: 2_000_000, Backup: "s3://acme/rag", Clients: []string{"rag-app"}}, nil},
		{"valid qdrant", vectordb.Spec{Name: "search", Kind: vectordb.Qdrant, Size: "100Gi", Replicas: 3, APIKey: "k"}, nil},
		{"restores into its own archive", vectordb.Spec{Name: "rag", Size: "20Gi", Backup: "s3://acme/rag", RestoreFrom: "rag"},
			[]string{`vectorDBs[0].archive: Invalid value: "rag": is the archive the database restores from: CloudNativePG refuses to archive into an archive that is not empty (WAL archive check); set archive to a new name, such as rag-2`}},
		{"archives without a backup, bad name", vectordb.Spec{Name: "rag", Size: "20Gi", Archive: "rag-2", RestoreFrom: "Rag_1"},
			[]string{`vectorDBs[0].archive: Forbidden: names an archive in pgvector's backup: set backup`, `vectorDBs[0].restoreFrom: Forbidden: names an archive`}},
		{"bad archive name", vectordb.Spec{Name: "rag", Size: "20Gi", Backup: "s3://acme/rag", Archive: "Rag_2"},
			[]string{`vectorDBs[0].archive: Invalid value: "Rag_2": must be a DNS label`}},
		{"restored", vectordb.Spec{Name: "rag", Size: "20Gi", Backup: "s3://acme/rag", RestoreFrom: "rag", Archive: "rag-2"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fieldtest.Expect(t, tc.spec.Validate(path()), tc.want...)
		})
	}
}

// Qdrant's capacity-planning example (qdrant.tech/documentation/
// capacity-planning): 1,000,000 vectors of 1024 dimensions need about
// 6,144,000,000 bytes.
func TestEstimateMatchesQdrantsExample(t *testing.T) {
	t.Parallel()
	if got := vectordb.EstimateBytes(1_000_000, 1024); got != 6_144_000_000 {
		t.Errorf("estimate %.0f bytes, want 6144000000", got)
	}
}

// A nodeSelector that picks a GPU pool's nodes is refused, naming the
// pool; one that picks CPU nodes is fine.
func TestCheckNodes(t *testing.T) {
	t.Parallel()
	pool := pooltest.Resolved(t, pooltest.AKS, gpupool.Spec{Name: "a100", SKU: "Standard_NC24ads_A100_v4", MaxNodes: 2}).Facts
	gpu := vectordb.Spec{Name: "rag", Size: "10Gi", NodeSelector: map[string]string{}}
	for k, v := range pool.NodeSelector {
		gpu.NodeSelector[k] = v
	}
	errs := gpu.CheckNodes(path().Child("nodeSelector"), []gpupool.Facts{pool})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "selects the nodes of GPU pool a100") {
		t.Errorf("a GPU pool's selector: %v", errs)
	}
	cpu := vectordb.Spec{Name: "rag", Size: "10Gi", NodeSelector: map[string]string{"agentpool": "system"}}
	if errs := cpu.CheckNodes(path().Child("nodeSelector"), []gpupool.Facts{pool}); len(errs) > 0 {
		t.Errorf("a CPU pool: %v", errs)
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	s := vectordb.Spec{Name: "rag", Size: "20Gi", StorageClass: "ceph-rbd", NodeSelector: map[string]string{"node-role": "cpu"}}.Defaults()
	got := vectordb.Cluster(s, &vectordb.Store{Destination: "s3://acme/rag", Endpoint: "https://s3.example"})
	want := map[string]any{
		"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
		"metadata": map[string]any{"name": "rag", "namespace": "vector-dbs", "labels": map[string]any{"velero.io/exclude-from-backup": "true"}},
		"spec": map[string]any{
			"instances": 1,
			"imageName": vectordb.PostgresImage,
			"storage":   map[string]any{"size": "20Gi", "storageClass": "ceph-rbd"},
			"resources": map[string]any{"requests": map[string]any{"cpu": "500m", "memory": "1Gi"}, "limits": map[string]any{"memory": "1Gi"}},
			"affinity": map[string]any{"nodeAffinity": vectordb.CPUOnly(), "enablePodAntiAffinity": true, "topologyKey": "kubernetes.io/hostname",
				"nodeSelector": map[string]any{"node-role": "cpu"}},
			"bootstrap": map[string]any{"initdb": map[string]any{"database": "app", "owner": "app", "secret": map[string]any{"name": "rag-credentials"},
				"postInitApplicationSQL": []any{"CREATE EXTENSION IF NOT EXISTS vector"}}},
			"enableSuperuserAccess": false,
			"inheritedMetadata": map[string]any{"labels": map[string]any{"velero.io/exclude-from-backup": "true",
				"app.kubernetes.io/managed-by": "gpu-node-pools"}},
			"backup": map[string]any{"retentionPolicy": "30d", "barmanObjectStore": map[string]any{
				"destinationPath": "s3://acme/rag", "endpointURL": "https://s3.example", "serverName": "rag",
				"wal": map[string]any{"compression": "gzip"}, "data": map[string]any{"compression": "gzip"},
				"s3Credentials": map[string]any{
					"accessKeyId":     map[string]any{"name": "rag-backup-store", "key": "ACCESS_KEY_ID"},
					"secretAccessKey": map[string]any{"name": "rag-backup-store", "key": "ACCESS_SECRET_KEY"},
				},
			}},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Cluster (-want +got):\n%s", d)
	}
}

// The database admits its clients, the model servers, Prometheus and the
// operator, and its own replicas; nothing else.
func TestNetworkPolicy(t *testing.T) {
	t.Parallel()
	s := vectordb.Spec{Name: "rag", Size: "1Gi", Clients: []string{"rag-app"}}.Defaults()
	np := vectordb.NetworkPolicy(s, "models", "monitoring", "cnpg-system")
	var from []string
	for _, p := range helmtest.Get(np, "spec", "ingress").([]any)[0].(map[string]any)["from"].([]any) {
		p := p.(map[string]any)
		if ns, ok := p["namespaceSelector"]; ok {
			from = append(from, ns.(map[string]any)["matchLabels"].(map[string]any)["kubernetes.io/metadata.name"].(string))
		} else {
			from = append(from, "pods:"+p["podSelector"].(map[string]any)["matchLabels"].(map[string]any)["cnpg.io/cluster"].(string))
		}
	}
	if d := cmp.Diff([]string{"models", "rag-app", "cnpg-system", "monitoring", "pods:rag"}, from); d != "" {
		t.Errorf("admitted (-want +got):\n%s", d)
	}
}

// The real Qdrant chart with the program's values: a restricted pod on
// CPU nodes only, without any GPU toleration or request, with its API key
// from the credentials Secret, persistence and a snapshot volume.
func TestQdrantChartRenders(t *testing.T) {
	t.Parallel()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	s := vectordb.Spec{Name: "search", Kind: vectordb.Qdrant, Size: "50Gi", Replicas: 3}.Defaults()
	objs := helmtest.RenderRelease(t, charts, helm.Release{Name: vectordb.QdrantRelease(s.Name), Chart: vectordb.QdrantChart, Dir: charts, Values: vectordb.QdrantValues(s)}, s.Namespace)
	var sts map[string]any
	for _, o := range objs {
		switch o["kind"] {
		case "StatefulSet":
			sts = o
		case "Secret":
			t.Errorf("the chart renders a Secret (the program's holds the key): %v", o["metadata"])
		}
	}
	if sts == nil {
		t.Fatalf("no StatefulSet among %d objects", len(objs))
	}
	spec := helmtest.Get(sts, "spec", "template", "spec").(map[string]any)
	if v, err := podsecurity.Violations("restricted", spec); err != nil || len(v) > 0 {
		t.Errorf("the Qdrant pod is not restricted: %v %v", v, err)
	}
	if d := cmp.Diff(vectordb.CPUOnly(), helmtest.Get(spec, "affinity", "nodeAffinity")); d != "" {
		t.Errorf("node affinity (-want +got):\n%s", d)
	}
	c := spec["containers"].([]any)[0].(map[string]any)
	if spec["tolerations"] != nil || strings.Contains(fmt.Sprint(c["resources"]), "nvidia.com") {
		t.Errorf("tolerations %v, resources %v: nothing of the GPUs", spec["tolerations"], c["resources"])
	}
	if !strings.HasSuffix(c["image"].(string), "-unprivileged") {
		t.Errorf("image %s: the unprivileged build", c["image"])
	}
	env := ""
	for _, e := range c["env"].([]any) {
		e := e.(map[string]any)
		if e["name"] == "QDRANT__SERVICE__API_KEY" {
			env = helmtest.Get(e, "valueFrom", "secretKeyRef", "name").(string)
		}
	}
	if env != vectordb.CredentialsSecret("search") {
		t.Errorf("the API key comes from %q", env)
	}
	claims := helmtest.Get(sts, "spec", "volumeClaimTemplates").([]any)
	if len(claims) != 2 || helmtest.Get(sts, "spec", "replicas") != 3.0 {
		t.Errorf("volume claims %d (storage and snapshots), replicas %v", len(claims), helmtest.Get(sts, "spec", "replicas"))
	}
}

// The real CloudNativePG operator chart with the program's values: its
// Deployment runs restricted (the chart's own security contexts), on CPU
// nodes, with resources, and the chart brings the CRDs the Clusters need.
func TestOperatorChartRenders(t *testing.T) {
	t.Parallel()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	objs := helmtest.RenderRelease(t, charts, vectordb.OperatorRelease(helm.Source{Dir: charts}), vectordb.OperatorNamespace)
	var deployments, clusterCRD int
	for _, o := range objs {
		switch o["kind"] {
		case "Deployment":
			deployments++
			spec := helmtest.Get(o, "spec", "template", "spec").(map[string]any)
			if v, err := podsecurity.Violations("restricted", spec); err != nil || len(v) > 0 {
				t.Errorf("the operator's pod is not restricted: %v %v", v, err)
			}
			if d := cmp.Diff(vectordb.CPUOnly(), helmtest.Get(spec, "affinity", "nodeAffinity")); d != "" {
				t.Errorf("operator node affinity (-want +got):\n%s", d)
			}
			if helmtest.Get(spec["containers"].([]any)[0], "resources", "limits", "memory") != "512Mi" {
				t.Errorf("operator resources %v", helmtest.Get(spec["containers"].([]any)[0], "resources"))
			}
		case "CustomResourceDefinition":
			if helmtest.Get(o, "metadata", "name") == "clusters.postgresql.cnpg.io" {
				clusterCRD++
			}
		}
	}
	if deployments != 1 || clusterCRD != 1 {
		t.Errorf("%d Deployments, %d Cluster CRDs", deployments, clusterCRD)
	}
}
