package vectordb_test

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// Under the recording mock: a pgvector with a given password and a
// client, backed up to S3, and a Qdrant with a generated key. Applied,
// each credentials Secret exists in the database's namespace, the serving
// namespace and each client's, holding the value only as a secret, and the
// credentials output is secret; rendered, the Secrets are named instead.
// The operator's chart comes only when asked for. Each database's alerts
// carry the labels Prometheus's rule selector wants.
func TestVectorDBsRegister(t *testing.T) {
	t.Parallel()
	specs := []vectordb.Spec{
		vectordb.Spec{Name: "rag", Size: "20Gi", Clients: []string{"rag-app"}, Backup: "s3://acme/rag", Password: "pw-" + pulumitest.SecretMarker}.Defaults(),
		vectordb.Spec{Name: "search", Kind: vectordb.Qdrant, Size: "50Gi"}.Defaults(),
	}
	store := &vectordb.Store{Endpoint: "https://s3.example", AccessKey: "ak-" + pulumitest.SecretMarker, SecretKey: "sk-" + pulumitest.SecretMarker}
	for _, rendering := range []bool{false, true} {
		var external int
		var credentialsSecret bool
		m, err := pulumitest.Run(func(ctx *pulumi.Context) error {
			prov, err := kubernetes.NewProvider(ctx, "workload", &kubernetes.ProviderArgs{})
			if err != nil {
				return err
			}
			v, err := vectordb.NewVectorDBs(ctx, "vectordb", &vectordb.Args{Specs: specs, InstallOperator: !rendering, OperatorNamespace: "cnpg-system",
				ServingNamespace: "models", PrometheusNamespace: "monitoring", RuleLabels: map[string]string{"release": "kube-prometheus-stack"},
				Store: store, Source: helm.Source{Rendering: rendering}, Workload: prov})
			if err != nil {
				return err
			}
			external = len(v.ExternalSecrets)
			credentialsSecret = pulumi.IsSecret(v.Credentials)
			return nil
		}, "gpu-node-pools", "test", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		types := map[string]int{}
		for _, r := range m.Resources() {
			types[r.Type]++
			for k, val := range r.Inputs {
				if !val.ContainsSecrets() && strings.Contains(val.String(), pulumitest.SecretMarker) {
					t.Errorf("%s input %s holds a credential in plain text", r.Name, k)
				}
			}
		}
		// rag: its namespace, models, rag-app, and the backup keys;
		// search: its namespace and models
		wantSecrets, wantExternal, wantCharts := 6, 0, 2
		if rendering {
			wantSecrets, wantExternal, wantCharts = 0, 6, 1
		}
		if types["kubernetes:core/v1:Secret"] != wantSecrets || external != wantExternal {
			t.Errorf("rendering %v: %d Secrets and %d named, want %d and %d", rendering, types["kubernetes:core/v1:Secret"], external, wantSecrets, wantExternal)
		}
		if types["kubernetes:helm.sh/v4:Chart"] != wantCharts || types["random:index/randomPassword:RandomPassword"] != 1 {
			t.Errorf("rendering %v: %d charts (the operator only applied), %d generated keys", rendering, types["kubernetes:helm.sh/v4:Chart"], types["random:index/randomPassword:RandomPassword"])
		}
		for _, typ := range []string{"kubernetes:postgresql.cnpg.io/v1:Cluster", "kubernetes:postgresql.cnpg.io/v1:ScheduledBackup",
			"kubernetes:monitoring.coreos.com/v1:PodMonitor", "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"} {
			if types[typ] != 1 {
				t.Errorf("%d %s", types[typ], typ)
			}
		}
		// each database's alerts in its namespace, found by Prometheus's
		// rule selector
		for _, db := range specs {
			r, ok := m.ByName("kubernetes:monitoring.coreos.com/v1:PrometheusRule", "vectordb-"+db.Name+"-alerts")
			if !ok {
				t.Errorf("no PrometheusRule for %s", db.Name)
				continue
			}
			if got := r.Inputs["metadata"].ObjectValue()["labels"].ObjectValue()["release"]; !got.IsString() || got.StringValue() != "kube-prometheus-stack" {
				t.Errorf("%s's rules are labelled %v", db.Name, r.Inputs["metadata"])
			}
			if got := r.Inputs["metadata"].ObjectValue()["namespace"]; got.StringValue() != db.Namespace {
				t.Errorf("%s's rules in namespace %v", db.Name, got)
			}
		}
		if types["kubernetes:networking.k8s.io/v1:NetworkPolicy"] != 2 || !credentialsSecret {
			t.Errorf("network policies %d; credentials output secret: %v", types["kubernetes:networking.k8s.io/v1:NetworkPolicy"], credentialsSecret)
		}
	}
}
