package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"

	"github.com/natron/gpu-node-pools/components/backup"
	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/images"
	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
	"github.com/natron/gpu-node-pools/internal/testkit/promtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// installMonitoringCRDs renders the prometheus-operator CRDs chart (its CRDs
// are templates) and applies them: the customer's Prometheus stack would
// have them.
func installMonitoringCRDs(t testing.TB, s *kubeapi.Server) {
	t.Helper()
	installChartCRDs(t, s, "prometheus-operator-crds-31.0.1.tgz")
}

// installChartCRDs applies the CRDs a chart archive renders (as templates
// or from crds/): what a platform that runs the chart has.
func installChartCRDs(t testing.TB, s *kubeapi.Server, chart string) {
	t.Helper()
	s.ApplyCRDs(t, helmtest.CRDFile(t, filepath.Join(pulumitest.SharedDir(t), "charts", chart)))
}

// recorder keeps the engine's events and progress output of a test, to
// look for replacements and for leaked secrets.
type recorder struct {
	mu       sync.Mutex
	events   []events.EngineEvent
	progress bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.progress.Write(p)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// replaced are the URNs the events recorded after the first n replace.
func (r *recorder) replaced(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events[n:] {
		if e.ResourcePreEvent != nil && e.ResourcePreEvent.Metadata.Op == "replace" {
			out = append(out, e.ResourcePreEvent.Metadata.URN)
		}
	}
	return out
}

// leaks says where the marker appears in what the engine told us.
func (r *recorder) leaks(marker string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	if strings.Contains(r.progress.String(), marker) {
		out = append(out, "progress output")
	}
	for _, e := range r.events {
		if b, _ := json.Marshal(e); bytes.Contains(b, []byte(marker)) {
			out = append(out, "engine events")
			break
		}
	}
	return out
}

// recordingEngine is the toolchain's engine with a throwaway file backend
// and work directory, recording what the engine reports.
func recordingEngine(t *testing.T) (automation.Engine, *recorder) {
	r := &recorder{}
	root := pulumitest.PulumiRoot(t)
	backend := t.TempDir()
	env := pulumitest.EngineEnv(t, root, "file://"+backend)
	return automation.Engine{
		BackendURL:      "file://" + backend,
		SecretsProvider: "passphrase",
		Env:             map[string]string{"PULUMI_CONFIG_PASSPHRASE": env["PULUMI_CONFIG_PASSPHRASE"], "PULUMI_HOME": env["PULUMI_HOME"]},
		PulumiRoot:      root,
		WorkDir:         t.TempDir(),
		Diff:            true, // the secret-leak checks read the property diffs too
		Progress:        r,
		OnEvent: func(_ string, e events.EngineEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.events = append(r.events, e)
		},
	}, r
}

// Every object of the full bare-metal dev stack (pools, GPU operator,
// monitoring, Kyverno policies, a model and a batch job) and of the prod
// stack's Kubernetes side is created by a real kube-apiserver through the
// real engine, which validates each against its schema or CRD: up, an
// unchanged preview, refresh, destroy. Secrets carry a marker that must
// never appear in plain text in state, outputs or the engine's output.
func TestAutomationAgainstAPIServer(t *testing.T) {
	t.Parallel()
	marker := pulumitest.SecretMarker
	// Each part on a server of its own, from a seed (the CRDs, created
	// once), with an engine of its own: the three run in parallel.
	t.Run("natron dev stack", func(t *testing.T) {
		t.Parallel()
		srv, kc, e, rec, ctx := liveServer(t, liveSeed, marker, "ClusterPolicy")
		cfg := devConfig(t, "")    // no renderDir: apply for real
		cfg.GitOps = gitops.Spec{} // GitOps delivery syncs a render: the next test
		block := cfg.Cluster.(*natron.Cluster)
		block.Kubeconfig, block.ManagementKubeconfig = kc, kc
		cfg.Storage.AccessKey, cfg.Storage.SecretKey = secret.Secret(marker+"-access"), secret.Secret(marker+"-secret")
		cfg.Serving.APIKey = secret.Secret(marker + "-api-key-of-the-dev-stack")
		backupStore := *cfg.Backup.Location
		backupStore.AccessKey, backupStore.SecretKey = secret.Secret(marker+"-backup-access"), secret.Secret(marker+"-backup-secret")
		cfg.Backup.Location = &backupStore
		cfg.VectorDBs[0].Password = secret.Secret(marker + "-rag-password")
		cfg.Platform.SkipAwait = true // no kubelet: pods never start here
		s, err := automation.OpenStack(ctx, "acme-live", cfg, e)
		upHidingSecrets(ctx, t, s, err, marker)
		expectObjects(t, srv, map[string][]string{
			"machinedeployments.cluster.x-k8s.io":                    {"-n", "capi-acme"},
			"clusterpolicies.nvidia.com":                             nil,
			"clusterpolicies.kyverno.io":                             nil,
			"prometheusrules.monitoring.coreos.com":                  {"-n", "gpu-platform"},
			"configmaps":                                             {"-n", "gpu-platform", "-l", "grafana_dashboard=1"},
			"deployments.apps":                                       {"-n", "models"},
			"cronjobs.batch":                                         {"-n", "batch"},
			"ciliumnetworkpolicies.cilium.io":                        {"-n", "models"},
			"scaledobjects.keda.sh":                                  {"-n", "models"},
			"interceptorroutes.http.keda.sh":                         {"-n", "models"},
			"servicemonitors.monitoring.coreos.com":                  {"-n", "models"},
			"networkpolicies.networking.k8s.io":                      {"-n", "models"},
			"kubeadmconfigtemplates.bootstrap.cluster.x-k8s.io":      {"-n", "capi-acme"},
			"metal3machinetemplates.infrastructure.cluster.x-k8s.io": {"-n", "capi-acme"},
			"schedules.velero.io":                                    {"-n", "velero"},
			"backupstoragelocations.velero.io":                       {"-n", "velero"},
			"clusters.postgresql.cnpg.io":                            {"-n", "vector-dbs"},
			"scheduledbackups.postgresql.cnpg.io":                    {"-n", "vector-dbs"},
			"podmonitors.monitoring.coreos.com":                      {"-n", "vector-dbs"},
		}, map[string]int{"machinedeployments.cluster.x-k8s.io": 3, "clusterpolicies.kyverno.io": 6})
		checkVectorDB(t, srv, marker)
		checkBackups(t, srv, marker)
		checkLiveEngine(t, srv, "llama3-8b")
		checkLiveOllama(t, srv, "llama-dev")
		checkEgressPolicyValidated(t, srv)
		// The Secrets do hold the values: the marker search below is live.
		for _, name := range []string{"gpu-node-pools-api-key", "gpu-node-pools-storage"} {
			data := srv.Kubectl(t, "get", "secret", name, "-n", "models", "-o", "go-template={{range .data}}{{. | base64decode}}{{end}}")
			if !strings.Contains(data, marker) {
				t.Errorf("Secret %s does not hold the configured secret", name)
			}
		}
		if got := srv.Kubectl(t, "get", "clusterpolicies.kyverno.io", "gpu-taint", "-o", "jsonpath={.spec.rules[0].validate.failureAction}"); got != "Audit" {
			t.Errorf("dev policies: failureAction %q, want Audit (Pulumi.dev.yaml)", got)
		}
		preview, err := s.Preview(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pulumitest.NoChanges(t, "preview after up", preview)
		checkDrift(ctx, t, srv, s)
		refreshed, err := s.Refresh(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if refreshed["same"] == 0 {
			t.Errorf("refresh read nothing back: %v", refreshed)
		}

		// A change that replaces the pools shows as a replacement.
		renamed, moved := *cfg, *block
		moved.ClusterName = "acme2"
		renamed.Cluster = &moved
		movedStack, err := automation.OpenStack(ctx, "acme-live", &renamed, e)
		if err != nil {
			t.Fatal(err)
		}
		before := rec.count()
		if _, err := movedStack.Preview(ctx); err != nil {
			t.Fatal(err)
		}
		mds := 0
		for _, urn := range rec.replaced(before) {
			if strings.Contains(urn, "MachineDeployment") {
				mds++
			}
		}
		if mds != 3 {
			t.Errorf("moving the pools to another cluster: %d MachineDeployments shown as replaced, want 3; replaced: %v", mds, rec.replaced(before))
		}
		// Destroy with the config that was applied.
		back, err := automation.OpenStack(ctx, "acme-live", cfg, e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := back.Destroy(ctx); err != nil {
			t.Fatal(err)
		}
		expectGone(t, srv)
	})

	t.Run("aks prod stack's kubernetes side", func(t *testing.T) {
		t.Parallel()
		srv, kc, e, _, ctx := liveServer(t, liveSeed, marker, "ClusterPolicy")
		cfg := stacktest.Config(t, "prod")
		cfg.Platform.ChartDir = filepath.Join(pulumitest.SharedDir(t), "charts")
		cfg.Platform.SkipAwait = true
		// The random provider cannot be built here: bring the key.
		cfg.Serving.APIKey = secret.Secret(marker + "-api-key-of-the-prod-stack")
		s, err := automation.OpenWorkloadStack(ctx, "acme-prod-k8s", cfg, kc, e)
		upHidingSecrets(ctx, t, s, err, marker)
		expectObjects(t, srv, map[string][]string{
			"daemonsets.apps":             {"-n", "gpu-platform"},
			"clusterpolicies.kyverno.io":  nil,
			"deployments.apps":            {"-n", "models"},
			"ingresses.networking.k8s.io": {"-n", "models"},
			"cronjobs.batch":              {"-n", "batch"},
			// default deny, DNS, the ACME solver, the downloads, the
			// model gateway, a model each
			"networkpolicies.networking.k8s.io": {"-n", "models"},
		}, map[string]int{"clusterpolicies.kyverno.io": 5, "networkpolicies.networking.k8s.io": 7})
		preview, err := s.Preview(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pulumitest.NoChanges(t, "preview after up", preview)
		// the host's own workload has come to scale with the KEDA the
		// stack installed
		hostScaledObject(t, srv)
		if _, err := s.Destroy(ctx); err != nil {
			t.Fatal(err)
		}
		expectGone(t, srv)
		expectHostScaling(t, srv)
	})

	// A rendering stack's GitOps objects and ExternalSecrets, and its
	// workload side with them, applied by the real engine through the
	// workload program, with Argo CD's, Flux's and External Secrets'
	// CRDs; then the same stack switched to Flux.
	t.Run("natron dev stack's gitops objects", func(t *testing.T) {
		t.Parallel()
		srv, kc, e, _, ctx := liveServer(t, liveGitOpsSeed, marker, "ExternalSecret")
		srv.Kubectl(t, "create", "namespace", "argocd")
		srv.Kubectl(t, "create", "namespace", "flux-system")
		cfg := devConfig(t, t.TempDir())
		cfg.Platform.SkipAwait = true
		cfg.Serving.APIKey = secret.Secret(marker + "-api-key-of-the-gitops-stack")
		// Velero installed by the program, in its own namespace: the
		// chart's CRDs are the ones applied above (same spec)
		cfg.Backup.Install, cfg.Backup.Namespace = true, "velero-gpu"
		cfg.Policies.AllowedRegistries.Registries = append(cfg.Policies.AllowedRegistries.Registries, "docker.io/velero")
		s, err := automation.OpenWorkloadStack(ctx, "acme-gitops", cfg, kc, e)
		upHidingSecrets(ctx, t, s, err, marker)
		expectObjects(t, srv, map[string][]string{
			"applications.argoproj.io":            {"-n", "argocd"},
			"externalsecrets.external-secrets.io": {"-A"},
			"schedules.velero.io":                 {"-n", "velero-gpu"},
			"deployments.apps":                    {"-n", "velero-gpu"},
		}, map[string]int{"applications.argoproj.io": 2, "externalsecrets.external-secrets.io": 7})
		if got := srv.Kubectl(t, "get", "deployment", "velero", "-n", "velero-gpu", "-o", "jsonpath={.spec.template.spec.initContainers[0].image}"); got != backup.Plugins[backup.AWS] {
			t.Errorf("the installed Velero's plugin: %q", got)
		}
		if got := srv.Kubectl(t, "get", "applications.argoproj.io", "acme-gitops-gpu-management", "-n", "argocd", "-o",
			"jsonpath={.spec.source.path} {.spec.syncPolicy.syncOptions}"); got != `clusters/acme/gpu/management ["ServerSideApply=true","CreateNamespace=true"]` {
			t.Errorf("management Application: %s", got)
		}
		if got := srv.Kubectl(t, "get", "externalsecrets.external-secrets.io", "gpu-node-pools-storage", "-n", "models", "-o",
			"jsonpath={.spec.data[*].secretKey}"); !strings.Contains(got, "RCLONE_CONFIG_SRC_SECRET_ACCESS_KEY") {
			t.Errorf("the storage ExternalSecret's keys: %s", got)
		}
		if out := srv.Kubectl(t, "get", "secrets", "-n", "models", "-o", "name"); strings.Contains(out, "gpu-node-pools-api-key") {
			t.Errorf("a rendering stack created a Secret the ExternalSecret owns: %s", out)
		}

		cfg.GitOps.Tool, cfg.GitOps.ManagementCluster = gitops.Flux, "natron-management-kubeconfig"
		flux, err := automation.OpenWorkloadStack(ctx, "acme-gitops", cfg, kc, e)
		upHidingSecrets(ctx, t, flux, err, marker)
		if out := strings.TrimSpace(srv.Kubectl(t, "get", "applications.argoproj.io", "-n", "argocd", "-o", "name")); out != "" {
			t.Errorf("switching to Flux left the Applications: %s", out)
		}
		expectObjects(t, srv, map[string][]string{
			"gitrepositories.source.toolkit.fluxcd.io":   {"-n", "flux-system"},
			"kustomizations.kustomize.toolkit.fluxcd.io": {"-n", "flux-system"},
		}, map[string]int{"gitrepositories.source.toolkit.fluxcd.io": 1, "kustomizations.kustomize.toolkit.fluxcd.io": 2 * len(gitops.Layers)})
		last, before := gitops.Layers[len(gitops.Layers)-1].Dir, gitops.Layers[len(gitops.Layers)-2].Dir
		custom := "acme-gitops-gpu-management-" + last
		if got := srv.Kubectl(t, "get", "kustomizations.kustomize.toolkit.fluxcd.io", custom, "-n", "flux-system", "-o",
			"jsonpath={.spec.dependsOn[0].name} {.spec.kubeConfig.secretRef.name} {.spec.path}"); got != "acme-gitops-gpu-management-"+before+
			" natron-management-kubeconfig ./clusters/acme/gpu/management/"+last {
			t.Errorf("Kustomization %s: %s", custom, got)
		}
		if _, err := flux.Destroy(ctx); err != nil {
			t.Fatal(err)
		}
		if out := strings.TrimSpace(srv.Kubectl(t, "get", "externalsecrets.external-secrets.io", "-A", "-o", "name")); out != "" {
			t.Errorf("destroy left %s", out)
		}
	})

}

// liveCRDs are the CRDs the stacks' objects need on the server (the
// customer's platform's operators): Cluster API and Metal3, Kyverno,
// Cilium, Velero, CloudNativePG's, Prometheus's.
func liveCRDs(t testing.TB, srv *kubeapi.Server) {
	t.Helper()
	crds := filepath.Join(pulumitest.SharedDir(t), "crds")
	srv.ApplyCRDs(t, filepath.Join(crds, "cluster-api"), filepath.Join(crds, "cluster-api-provider-metal3"),
		filepath.Join(crds, "kyverno", "kyverno.io_clusterpolicies.yaml"), filepath.Join(crds, "cilium", "ciliumnetworkpolicies.yaml"),
		filepath.Join(crds, "velero"), filepath.Join(crds, "cloudnative-pg", "postgresql.cnpg.io_clusters.yaml"),
		filepath.Join(crds, "cloudnative-pg", "postgresql.cnpg.io_scheduledbackups.yaml"))
	installMonitoringCRDs(t, srv)
}

var (
	liveSeed = &kubeapi.Seed{Name: "live", Prepare: liveCRDs}
	// a rendering stack's server has Argo CD's, Flux's and External
	// Secrets' CRDs besides, and KEDA's, which rendered stacks bring
	// through their pipeline (a stack that applies KEDA's chart itself
	// creates them)
	liveGitOpsSeed = &kubeapi.Seed{Name: "live-gitops", Prepare: func(t testing.TB, srv *kubeapi.Server) {
		liveCRDs(t, srv)
		crds := filepath.Join(pulumitest.SharedDir(t), "crds")
		srv.ApplyCRDs(t, filepath.Join(crds, "argo-cd", "application-crd.yaml"), filepath.Join(crds, "flux"),
			filepath.Join(crds, "external-secrets", "external-secrets.io_externalsecrets.yaml"), filepath.Join(crds, "keda-http-add-on"))
		installChartCRDs(t, srv, "keda-2.20.2.tgz")
	}}
)

// liveServer is an API server from seed with the customer's namespaces
// (where its Cluster lives, its Velero, the pgvector's client), the
// kubeconfig the stacks reach it with (a YAML comment carries the marker
// through it) and a recording engine; when the test ends, the marker must
// not be in plain text in the engine's state, work directory or output,
// and that output must name the kind shown (it reached the recorder).
func liveServer(t *testing.T, seed *kubeapi.Seed, marker, shown string) (*kubeapi.Server, secret.Secret, automation.Engine, *recorder, context.Context) {
	t.Helper()
	e, rec := recordingEngine(t)
	srv := kubeapi.Start(t, kubeapi.WithSeed(seed))
	srv.Kubectl(t, "create", "namespace", "capi-acme")
	srv.Kubectl(t, "create", "namespace", "velero")
	srv.Kubectl(t, "create", "namespace", "rag-app")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	t.Cleanup(cancel)
	t.Cleanup(func() {
		backend := strings.TrimPrefix(e.BackendURL, "file://")
		if hits := pulumitest.FilesContaining(t, marker, backend, e.WorkDir); len(hits) > 0 {
			t.Errorf("secret marker in plain text in %v", hits)
		}
		if where := rec.leaks(marker); len(where) > 0 {
			t.Errorf("secret marker in plain text in the %v", where)
		}
		if rec.count() == 0 || !strings.Contains(rec.progress.String(), shown) {
			t.Errorf("the engine's events and output never reached the recorder (no %s in its output)", shown)
		}
	})
	return srv, secret.Secret(srv.KubeconfigYAML(t) + "# " + marker + "-kubeconfig\n"), e, rec, ctx
}

// expectObjects checks that each kind has objects (and, where given, how
// many) in the API server.
func expectObjects(t *testing.T, srv *kubeapi.Server, kinds map[string][]string, counts map[string]int) {
	t.Helper()
	for kind, args := range kinds {
		out := strings.Fields(srv.Kubectl(t, append([]string{"get", kind, "-o", "name"}, args...)...))
		if want, ok := counts[kind]; ok && len(out) != want || len(out) == 0 {
			t.Errorf("%s %v: %d objects %v, want %v", kind, args, len(out), out, max(counts[kind], 1))
		}
	}
}

// checkEgressPolicyValidated: the server created the download Jobs'
// CiliumNetworkPolicy with a toFQDNs rule for the store and a DNS rule,
// and its CRD's schema is live: a host name Cilium would not match is
// refused.
func checkEgressPolicyValidated(t *testing.T, srv *kubeapi.Server) {
	t.Helper()
	var cnp map[string]any
	srv.GetJSON(t, &cnp, "ciliumnetworkpolicies.cilium.io", serving.DownloadComponent, "-n", "models")
	egress := fmt.Sprint(helmtest.Get(cnp, "spec", "egress"))
	if !strings.Contains(egress, "matchName:s3.natron-cloud.example") || !strings.Contains(egress, "matchPattern:*") {
		t.Errorf("CiliumNetworkPolicy egress as stored: %s", egress)
	}
	bad := stacktest.DeepCopy(cnp)
	bad["metadata"] = map[string]any{"name": "bad-fqdn", "namespace": "models"}
	helmtest.Get(bad, "spec", "egress").([]any)[1].(map[string]any)["toFQDNs"] = []any{map[string]any{"matchName": "s3 natron/cloud"}}
	if out, err := srv.TryCreate(t, bad); err == nil || !strings.Contains(out, "matchName") {
		t.Errorf("a CiliumNetworkPolicy with an invalid host name: err %v, server said %q", err, out)
	}
}

// checkBackups: Velero's CRDs admitted the Schedule over the program's
// namespaces, with the weights policy, and the Ceph location reading the
// credentials Secret, which holds the configured keys; the weights claim
// carries Velero's exclude label.
func checkBackups(t *testing.T, srv *kubeapi.Server, marker string) {
	t.Helper()
	if got := srv.Kubectl(t, "get", "schedules.velero.io", backup.ScheduleName, "-n", "velero", "-o",
		"jsonpath={.spec.template.includedNamespaces} {.spec.template.resourcePolicy.name}"); got != `["batch","gpu-platform","logging","models","vector-dbs"] `+backup.PolicyName {
		t.Errorf("Schedule: %s", got)
	}
	if got := srv.Kubectl(t, "get", "backupstoragelocations.velero.io", "-n", "velero", "-o", "jsonpath={.items[0].spec.credential.name}"); got != backup.CredentialsName {
		t.Errorf("location's credential %q", got)
	}
	data := srv.Kubectl(t, "get", "secret", backup.CredentialsName, "-n", "velero", "-o", "go-template={{range .data}}{{. | base64decode}}{{end}}")
	if !strings.Contains(data, marker+"-backup-access") || !strings.Contains(data, "aws_secret_access_key="+marker+"-backup-secret") {
		t.Errorf("the backup credentials Secret does not hold the configured keys")
	}
	// the claim is backed up (its volume is not: the resource policy)
	if got := srv.Kubectl(t, "get", "pvc", serving.WeightsClaim("llama3-8b"), "-n", "models", "-o", `jsonpath={.metadata.labels.velero\.io/exclude-from-backup}`); got != "" {
		t.Errorf("weights claim exclude label %q: a restore would leave the engines without their claim", got)
	}
}

// checkVectorDB: CloudNativePG's CRD admitted the pgvector Cluster (the
// image with the extension, the extension created after initdb, CPU nodes
// only, backups to Ceph), and the credentials Secret, with the configured
// password, is in the database's namespace and in its client's.
func checkVectorDB(t *testing.T, srv *kubeapi.Server, marker string) {
	t.Helper()
	got := srv.Kubectl(t, "get", "clusters.postgresql.cnpg.io", "rag", "-n", "vector-dbs", "-o",
		"jsonpath={.spec.imageName} {.spec.bootstrap.initdb.postInitApplicationSQL[0]} {.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator} {.spec.backup.barmanObjectStore.destinationPath}")
	if got != images.Pin(vectordb.PostgresImage, nil)+" CREATE EXTENSION IF NOT EXISTS vector NotIn s3://acme-vector-backups/rag" {
		t.Errorf("pgvector Cluster: %s", got)
	}
	for _, ns := range []string{"vector-dbs", "rag-app", "models"} {
		data := srv.Kubectl(t, "get", "secret", vectordb.CredentialsSecret("rag"), "-n", ns, "-o", "go-template={{range .data}}{{. | base64decode}}{{end}}")
		if !strings.Contains(data, marker+"-rag-password") {
			t.Errorf("the pgvector credentials in %s do not hold the configured password", ns)
		}
	}
	// its alerts, as the API server keeps them, load in Prometheus: every
	// rule of a backed-up pgvector database, WAL archiving's too
	var rule map[string]any
	srv.GetJSON(t, &rule, "prometheusrules.monitoring.coreos.com", "rag-alerts", "-n", "vector-dbs")
	want := vectordb.AlertRules(vectordb.Spec{Name: "rag", Size: "1Gi", Backup: "s3://acme-vector-backups/rag"}.Defaults())
	if n := promtest.ParseRules(t, rule); n != len(want) || n == 0 {
		t.Errorf("pgvector rag's PrometheusRule holds %d rules, want %d", n, len(want))
	}
}

// expectGone checks that destroy removed the stack's objects.
// hostScaledObject is a ScaledObject of the host's, in a namespace of its
// own, made once KEDA's CRDs are there.
func hostScaledObject(t *testing.T, srv *kubeapi.Server) {
	t.Helper()
	srv.Kubectl(t, "create", "namespace", "shop")
	srv.Create(t, map[string]any{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
		"metadata": map[string]any{"name": "checkout", "namespace": "shop"},
		"spec": map[string]any{"scaleTargetRef": map[string]any{"name": "checkout"},
			"triggers": []any{map[string]any{"type": "cpu", "metricType": "Utilization", "metadata": map[string]any{"value": "60"}}}}})
}

// expectHostScaling: the stack's KEDA went, its CRDs stayed, and with
// them the host's ScaledObject (the chart ships its CRDs as templates:
// deleting them would delete every ScaledObject in the cluster).
func expectHostScaling(t *testing.T, srv *kubeapi.Server) {
	t.Helper()
	if out := strings.TrimSpace(srv.Kubectl(t, "get", "deployments", "-n", serving.KEDANamespace, "--ignore-not-found", "-o", "name")); out != "" {
		t.Errorf("destroy left the stack's KEDA: %s", out)
	}
	for _, crd := range []string{"scaledobjects.keda.sh", "scaledjobs.keda.sh", "triggerauthentications.keda.sh"} {
		if out := strings.TrimSpace(srv.Kubectl(t, "get", "crd", crd, "--ignore-not-found", "-o", "name")); out == "" {
			t.Errorf("destroy deleted the CRD %s, and with it every object of its kind in the cluster", crd)
		}
	}
	if out := strings.TrimSpace(srv.Kubectl(t, "get", "scaledobjects.keda.sh", "checkout", "-n", "shop", "--ignore-not-found", "-o", "name")); out == "" {
		t.Error("destroy deleted the host's own ScaledObject shop/checkout")
	}
}

func expectGone(t *testing.T, srv *kubeapi.Server) {
	t.Helper()
	for _, q := range [][]string{
		{"get", "machinedeployments.cluster.x-k8s.io", "-A", "-o", "name"},
		{"get", "clusterpolicies.kyverno.io", "-o", "name"},
		{"get", "namespaces", "gpu-platform", "models", "batch", "--ignore-not-found", "-o", "name"},
	} {
		if out := strings.TrimSpace(srv.Kubectl(t, q...)); out != "" {
			t.Errorf("destroy left %q", out)
		}
	}
}

// upHidingSecrets runs up on a freshly opened stack and checks that only
// secret outputs hold the marker. Whatever happens next, the stack is
// destroyed when the test ends, so the next one starts from a clean server.
func upHidingSecrets(ctx context.Context, t *testing.T, s *automation.Stack, openErr error, marker string) {
	t.Helper()
	if openErr != nil {
		t.Fatal(openErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			_, _ = s.Destroy(ctx)
		}
	})
	outputs, _, err := s.Up(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(outputs) == 0 {
		t.Fatal("no outputs")
	}
	for k, o := range outputs {
		if b, _ := json.Marshal(o.Value); !o.Secret && bytes.Contains(b, []byte(marker)) {
			t.Errorf("a secret leaked into the plain stack output %s", k)
		}
	}
	if !outputs["apiKey"].Secret {
		t.Errorf("apiKey output is not a secret")
	}
}

// checkDrift is the drift run's check on a stack that applies to a
// cluster: right after an up, a refresh in preview finds nothing; once an
// object is deleted behind Pulumi's back, it finds exactly that one gone,
// and the state is not written (a second look finds it again).
func checkDrift(ctx context.Context, t *testing.T, srv *kubeapi.Server, s *automation.Stack) {
	t.Helper()
	clean, err := s.Drift(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if clean["update"]+clean["delete"] > 0 || clean["same"] == 0 {
		t.Errorf("drift right after up: %v, want only same", clean)
	}
	jobs := strings.Fields(srv.Kubectl(t, "get", "cronjobs.batch", "-n", "batch", "-o", "name"))
	if len(jobs) == 0 {
		t.Fatal("no CronJob in batch to change behind Pulumi's back")
	}
	srv.Kubectl(t, "delete", "-n", "batch", jobs[0])
	for i := range 2 {
		drifted, err := s.Drift(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if drifted["delete"] != 1 {
			t.Errorf("drift #%d after deleting %s: %v, want 1 delete", i+1, jobs[0], drifted)
		}
	}
}
