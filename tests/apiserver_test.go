package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/stacks"
	"github.com/natron/gpu-node-pools/tests/helmtest"
	"github.com/natron/gpu-node-pools/tests/kubeapi"
	"github.com/natron/gpu-node-pools/tests/pulumitest"
)

// installMonitoringCRDs renders the prometheus-operator CRDs chart (its CRDs
// are templates) and applies them: the customer's Prometheus stack would
// have them.
func installMonitoringCRDs(t *testing.T, s *kubeapi.Server) {
	t.Helper()
	archive := filepath.Join(pulumitest.SharedDir(t), "charts", "prometheus-operator-crds-31.0.1.tgz")
	var docs []string
	for _, o := range helmtest.RenderChart(t, archive, "prometheus-operator-crds", "default", nil, true) {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	f := filepath.Join(t.TempDir(), "monitoring-crds.yaml")
	if err := os.WriteFile(f, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	s.ApplyCRDs(t, f)
}

// A bare-metal stack applied for real, through the Automation API, to a real
// kube-apiserver acting as management and workload cluster: up, an
// unchanged preview, refresh (which reads every object back), destroy.
func TestAutomationAgainstAPIServer(t *testing.T) {
	var evs atomic.Int64
	e := testEngine(t, &evs)
	srv := kubeapi.Start(t)
	crds := filepath.Join(pulumitest.SharedDir(t), "crds")
	srv.ApplyCRDs(t, filepath.Join(crds, "cluster-api"), filepath.Join(crds, "cluster-api-provider-metal3"))
	installMonitoringCRDs(t, srv)
	srv.Kubectl(t, "create", "namespace", "capi-acme") // where the customer's Cluster lives

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cfg := devConfig(t, "") // no renderDir: apply for real
	kc := stacks.Secret(srv.KubeconfigYAML(t))
	cfg.Natron.Kubeconfig, cfg.Natron.ManagementKubeconfig = kc, kc
	cfg.Platform.SkipAwait = true // no kubelet: pods never start here
	s, err := stacks.OpenStack(ctx, "acme-live", cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Up(ctx); err != nil {
		t.Fatal(err)
	}
	mds := srv.Kubectl(t, "get", "machinedeployments.cluster.x-k8s.io", "-n", "capi-acme", "-o", "name")
	if strings.Count(mds, "machinedeployment") != 3 {
		t.Errorf("machine deployments in the API server: %q", mds)
	}
	for _, obj := range [][]string{
		{"get", "clusterpolicies.nvidia.com", "-o", "name"},
		{"get", "prometheusrules.monitoring.coreos.com", "-n", "gpu-platform", "-o", "name"},
		{"get", "configmaps", "-n", "gpu-platform", "-l", "grafana_dashboard=1", "-o", "name"},
	} {
		if out := srv.Kubectl(t, obj...); strings.TrimSpace(out) == "" {
			t.Errorf("kubectl %v: nothing there", obj)
		}
	}
	preview, err := s.Preview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pulumitest.NoChanges(t, "preview after up", preview)
	refreshed, err := s.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if refreshed["same"] == 0 {
		t.Errorf("refresh read nothing back: %v", refreshed)
	}
	if _, err := s.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if mds := srv.Kubectl(t, "get", "machinedeployments.cluster.x-k8s.io", "-n", "capi-acme", "-o", "name"); strings.TrimSpace(mds) != "" {
		t.Errorf("destroy left %q", mds)
	}
}
