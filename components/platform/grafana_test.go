package platform_test

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// documented are the grafana.sidecar.dashboards values of
// kube-prometheus-stack the README asks a platform to set so that our
// dashboards land in their folder.
var documented = map[string]any{
	"folderAnnotation": platform.FolderAnnotation,
	"provider":         map[string]any{"foldersFromFilesStructure": true},
}

// The Grafana that kube-prometheus-stack (82.4.3, vendored in the
// vllm-stack archive) runs, rendered with its own defaults plus the values
// the README documents: its dashboard sidecar selects the label our
// dashboard ConfigMaps carry, searches every namespace, files dashboards by
// the annotation we set, and Grafana's provider builds folders from the
// files. k8s-sidecar's rule (README and src/resources.py of
// kiwigrid/k8s-sidecar): a ConfigMap whose LABEL label has LABEL_VALUE, in
// NAMESPACE, is written under the folder its FOLDER_ANNOTATION names.
func TestGrafanaSidecarFindsOurDashboards(t *testing.T) {
	t.Parallel()
	archive := filepath.Join(pulumitest.SharedDir(t), "charts", "vllm-stack-0.1.12.tgz")
	// kube-prometheus-stack's own grafana defaults (values.yaml, grafana.sidecar)
	dashboards := map[string]any{"enabled": true, "label": "grafana_dashboard", "labelValue": "1", "searchNamespace": "ALL"}
	maps.Copy(dashboards, documented)
	values := map[string]any{"sidecar": map[string]any{"dashboards": dashboards}}
	objs := helmtest.RenderSubchart(t, archive, []string{"kube-prometheus-stack", "grafana"}, "kube-prometheus-stack", "monitoring", values)
	env := map[string]string{}
	provider := ""
	for _, o := range objs {
		switch o["kind"] {
		case "Deployment":
			for _, c := range helmtest.Get(o, "spec", "template", "spec", "containers").([]any) {
				if helmtest.Get(c, "name") != "grafana-sc-dashboard" {
					continue
				}
				for _, e := range helmtest.Get(c, "env").([]any) {
					if v, ok := helmtest.Get(e, "value").(string); ok {
						env[helmtest.Get(e, "name").(string)] = v
					}
				}
			}
		case "ConfigMap":
			if p, ok := helmtest.Get(o, "data", "provider.yaml").(string); ok {
				provider = p
			}
		}
	}
	if env["LABEL"] != platform.DashboardLabel || env["LABEL_VALUE"] != platform.DashboardLabelValue {
		t.Errorf("the sidecar selects %s=%s, our dashboards carry %s=%s", env["LABEL"], env["LABEL_VALUE"], platform.DashboardLabel, platform.DashboardLabelValue)
	}
	if env["NAMESPACE"] != "ALL" && env["NAMESPACE"] != platform.DefaultNamespace {
		t.Errorf("the sidecar searches %q, our dashboards live in %s", env["NAMESPACE"], platform.DefaultNamespace)
	}
	if env["FOLDER_ANNOTATION"] != platform.FolderAnnotation {
		t.Errorf("the sidecar files dashboards by %q, ours say their folder in %s", env["FOLDER_ANNOTATION"], platform.FolderAnnotation)
	}
	if !strings.Contains(provider, "foldersFromFilesStructure: true") {
		t.Errorf("Grafana's dashboard provider does not make folders from the files:\n%s", provider)
	}
}
