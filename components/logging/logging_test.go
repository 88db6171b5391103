package logging_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/components/logging"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

func pools(t *testing.T) []gpupool.Facts {
	t.Helper()
	return []gpupool.Facts{
		pooltest.Resolved(t, pooltest.AKS, gpupool.Spec{Name: "a100", SKU: "Standard_NC24ads_A100_v4", MaxNodes: 2}).Facts,
		pooltest.Resolved(t, pooltest.AKS, gpupool.Spec{Name: "spot", SKU: "Standard_NC40ads_H100_v5", MaxNodes: 2, Spot: true}).Facts,
	}
}

// The collector tolerates every taint of every pool once: the GPU taint
// and, with a spot pool, AKS's spot taint.
func TestTolerations(t *testing.T) {
	t.Parallel()
	got := logging.Tolerations(pools(t))
	var keys []string
	for _, tol := range got {
		keys = append(keys, tol.Key+"="+tol.Value+":"+tol.Effect)
	}
	want := "nvidia.com/gpu=present:NoSchedule kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
	if strings.Join(keys, " ") != want {
		t.Errorf("tolerations %v, want %s", keys, want)
	}
}

// The real Alloy chart, rendered with the program's values: a DaemonSet
// whose pods tolerate the pools' taints, run restricted with resources,
// and carry the config that ships this node's pods' logs to the Loki URL.
func TestAlloyChartRenders(t *testing.T) {
	t.Parallel()
	s := logging.Spec{Install: true, LokiURL: "http://loki-gateway.loki.svc/loki/api/v1/push"}.Defaults()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	objs := helmtest.RenderRelease(t, charts, logging.Release(s, pools(t), helm.Source{Dir: charts}), s.Namespace)
	var ds, cm, role map[string]any
	for _, o := range objs {
		switch o["kind"] {
		case "DaemonSet":
			ds = o
		case "ConfigMap":
			cm = o
		case "ClusterRole":
			role = o
		case "CustomResourceDefinition":
			t.Errorf("the chart installs a CRD: %v", o["metadata"])
		}
	}
	if ds == nil || cm == nil {
		t.Fatalf("no DaemonSet or ConfigMap among %d objects", len(objs))
	}
	spec := ds["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	tols := spec["tolerations"].([]any)
	if len(tols) != 2 || tols[0].(map[string]any)["key"] != "nvidia.com/gpu" {
		t.Errorf("DaemonSet tolerations %v", tols)
	}
	// Pod Security admission's own library judges the pod: restricted
	if v, err := podsecurity.Violations("restricted", spec); err != nil || len(v) > 0 {
		t.Errorf("the Alloy pod is not restricted: %v %v", v, err)
	}
	for _, c := range spec["containers"].([]any) {
		c := c.(map[string]any)
		sc, _ := c["securityContext"].(map[string]any)
		lim, _ := c["resources"].(map[string]any)["limits"].(map[string]any)
		if sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false || lim["memory"] == nil {
			t.Errorf("container %s: security %v, limits %v", c["name"], sc, lim)
		}
	}
	// the node's name reaches the config as HOSTNAME, once: a second
	// entry is refused by the API server
	for _, c := range spec["containers"].([]any) {
		c := c.(map[string]any)
		if c["name"] != "alloy" {
			continue
		}
		seen := map[string]int{}
		for _, e := range c["env"].([]any) {
			seen[e.(map[string]any)["name"].(string)]++
		}
		if seen["HOSTNAME"] != 1 {
			t.Errorf("alloy's HOSTNAME is set %d times: %v", seen["HOSTNAME"], c["env"])
		}
	}
	// loki.source.kubernetes lists the pods and reads their logs through
	// the API server: the chart's ClusterRole must allow both
	allows := func(resource, verb string) bool {
		for _, r := range role["rules"].([]any) {
			r := r.(map[string]any)
			if slices.Contains(r["resources"].([]any), any(resource)) && slices.Contains(r["verbs"].([]any), any(verb)) {
				return true
			}
		}
		return false
	}
	if role == nil || !allows("pods", "list") || !allows("pods", "watch") || !allows("pods/log", "get") {
		t.Errorf("the chart's ClusterRole does not let Alloy list pods and read their logs: %v", role)
	}
	config := cm["data"].(map[string]any)["config.alloy"].(string)
	if !strings.Contains(config, `url = "http://loki-gateway.loki.svc/loki/api/v1/push"`) || !strings.Contains(config, `loki.source.kubernetes "pods"`) {
		t.Errorf("config.alloy:\n%s", config)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec logging.Spec
		want string
	}{
		{logging.Spec{Install: true}, "logging.lokiUrl: Invalid value: \"\": required with install"},
		{logging.Spec{Install: true, LokiURL: "loki:3100"}, "logging.lokiUrl: Invalid value: \"loki:3100\""},
		{logging.Spec{LokiURL: "http://loki"}, "logging.install: Forbidden: lokiUrl and values configure the Alloy"},
		{logging.Spec{Namespace: "Logs"}, "logging.namespace: Invalid value: \"Logs\": must be a DNS label"},
	} {
		errs := tc.spec.Validate(fieldPath())
		if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.spec, errs, tc.want)
		}
	}
	if errs := (logging.Spec{Install: true, LokiURL: "https://loki.example/loki/api/v1/push"}).Validate(fieldPath()); len(errs) > 0 {
		t.Errorf("valid: %v", errs)
	}
}

func fieldPath() *field.Path { return field.NewPath("logging") }
