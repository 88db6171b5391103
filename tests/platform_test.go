package tests

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/program"
)

var gpuTolerationValue = map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
var spotTolerationValue = map[string]any{"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}

func mappable(v resource.PropertyValue) any { return v.Mappable() }

// The platform layer on AKS: device plugin and DCGM exporter from their
// upstream repositories at the pinned versions, all in the workload cluster.
func TestPlatformOnAKSUnderMocks(t *testing.T) {
	t.Parallel()
	m, _ := runStack(t, "prod")
	for _, c := range []struct{ name, chart, version, repo string }{
		{"gpu-nvidia-device-plugin", "nvidia-device-plugin", "0.20.0", "https://nvidia.github.io/k8s-device-plugin"},
		{"gpu-dcgm-exporter", "dcgm-exporter", "4.8.2", "https://nvidia.github.io/dcgm-exporter/helm-charts"},
	} {
		r, ok := m.ByName(chartType, c.name)
		if !ok {
			t.Fatalf("no chart %s", c.name)
		}
		in := r.Inputs
		if str(in, "chart") != c.chart || str(in, "version") != c.version || str(in, "repositoryOpts", "repo") != c.repo ||
			str(in, "namespace") != "gpu-platform" || str(in, "name") != c.chart {
			t.Errorf("%s: chart %q %q %q in %q", c.name, str(in, "chart"), str(in, "version"), str(in, "repositoryOpts", "repo"), str(in, "namespace"))
		}
		tol := mappable(dig(in, "values", "tolerations"))
		if !reflect.DeepEqual(tol, []any{gpuTolerationValue, spotTolerationValue}) {
			t.Errorf("%s tolerations = %v, want the GPU and the spot taint (prod has a spot pool)", c.name, tol)
		}
		if str(in, "values", "nodeSelector", "nvidia.com/gpu.present") != "true" {
			t.Errorf("%s nodeSelector = %v", c.name, mappable(dig(in, "values", "nodeSelector")))
		}
	}
	// prod's MIG pool (nd96) runs the single strategy on its own nodes;
	// no global strategy overrides it
	dp, _ := m.ByName(chartType, "gpu-nvidia-device-plugin")
	if got := dig(dp.Inputs, "values", "migStrategy"); !got.IsNull() {
		t.Errorf("migStrategy %v: a global strategy would override every node's config", got)
	}
	if got := str(dp.Inputs, "values", "config", "map", "nd96"); !strings.Contains(got, "migStrategy: single") {
		t.Errorf("the nd96 MIG pool's device plugin config: %q", got)
	}
	sm, ok := m.ByName("kubernetes:monitoring.coreos.com/v1:ServiceMonitor", "gpu-dcgm-servicemonitor")
	if !ok || str(sm.Inputs, "metadata", "labels", "release") != "kube-prometheus-stack" ||
		!strings.Contains(dig(sm.Inputs, "spec", "endpoints").String(), "15s") {
		t.Errorf("DCGM ServiceMonitor: %v", sm.Inputs.Mappable())
	}
	checkPlatformCommon(t, m)
}

// On bare metal the GPU operator brings driver, toolkit, device plugin and
// DCGM exporter; a chart directory replaces the Helm repository.
func TestPlatformOnBareMetalUnderMocks(t *testing.T) {
	t.Parallel()
	cfg, secrets, err := pulumitest.StackConfig("dev")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(pulumitest.SharedDir(t), "charts")
	b, _ := json.Marshal(map[string]any{"chartDir": dir})
	cfg["gpu-node-pools:platform"] = string(b)
	m, err := pulumitest.Run(program.Program, "gpu-node-pools", "dev", cfg, secrets)
	if err != nil {
		t.Fatal(err)
	}
	op, ok := m.ByName(chartType, "gpu-gpu-operator")
	if !ok {
		t.Fatal("no gpu-operator chart on bare metal")
	}
	if _, dp := m.ByName(chartType, "gpu-nvidia-device-plugin"); dp {
		t.Error("the device plugin chart must not run beside the GPU operator")
	}
	in := op.Inputs
	if str(in, "chart") != filepath.Join(dir, "gpu-operator-v26.7.0.tgz") || !dig(in, "version").IsNull() || !dig(in, "repositoryOpts").IsNull() {
		t.Errorf("local chart: %q version %v repo %v", str(in, "chart"), dig(in, "version"), dig(in, "repositoryOpts"))
	}
	v := func(p ...string) resource.PropertyValue { return dig(in, append([]string{"values"}, p...)...) }
	// node-feature-discovery labels the GPU nodes the operator recognises
	if !v("driver", "enabled").BoolValue() || !v("toolkit", "enabled").BoolValue() || !v("nfd", "enabled").BoolValue() {
		t.Errorf("operator components: driver %v toolkit %v nfd %v", v("driver", "enabled"), v("toolkit", "enabled"), v("nfd", "enabled"))
	}
	if !reflect.DeepEqual(mappable(v("daemonsets", "tolerations")), []any{gpuTolerationValue}) {
		t.Errorf("operand tolerations = %v", mappable(v("daemonsets", "tolerations")))
	}
	if v("mig", "strategy").StringValue() != "" || !v("migManager", "enabled").BoolValue() {
		t.Errorf("dev has a MIG pool: mig %v (no global strategy), migManager %v", mappable(v("mig")), v("migManager", "enabled"))
	}
	if data := v("devicePlugin", "config", "data").ObjectValue(); !strings.Contains(data["train"].StringValue(), "migStrategy: single") {
		t.Errorf("the train MIG pool's device plugin config: %v", data)
	}
	if data := v("devicePlugin", "config", "data").ObjectValue(); !strings.Contains(data["notebook"].StringValue(), "replicas: 4") {
		t.Errorf("time-slicing config for the notebook pool: %v", data)
	}
	checkPlatformCommon(t, m)
}

// checkPlatformCommon checks what both targets share.
func checkPlatformCommon(t *testing.T, m *pulumitest.Mocks) {
	t.Helper()
	byName := func(typ, name string) pulumitest.Resource {
		t.Helper()
		r, ok := m.ByName(typ, name)
		if !ok {
			t.Fatalf("no %s %s registered", typ, name)
		}
		return r
	}
	ns := byName(namespaceType, "gpu-namespace")
	if str(ns.Inputs, "metadata", "name") != "gpu-platform" || str(ns.Inputs, "metadata", "labels", "pod-security.kubernetes.io/enforce") != "privileged" {
		t.Errorf("namespace: %v", mappable(dig(ns.Inputs, "metadata")))
	}
	rule := byName(ruleType, "gpu-alerts")
	groups, _ := mappable(dig(rule.Inputs, "spec", "groups")).([]any)
	if len(groups) != 1 || str(rule.Inputs, "metadata", "labels", "release") != "kube-prometheus-stack" {
		t.Errorf("PrometheusRule: %v", rule.Inputs.Mappable())
	} else {
		// the rules the defaults give, by name: derived, not counted by hand
		var got, want []string
		for _, r := range groups[0].(map[string]any)["rules"].([]any) {
			got = append(got, r.(map[string]any)["alert"].(string))
		}
		for _, r := range platform.AlertRules(platform.Spec{}.Defaults(platform.DevicePlugin)) {
			want = append(want, r.Alert)
		}
		if len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("alert rules %v, want the default rules %v", got, want)
		}
	}
	for _, uid := range []string{"gnp-gpu-fleet", "gnp-model-serving"} {
		cm := byName(configMapType, "gpu-dashboard-"+uid)
		if str(cm.Inputs, "metadata", "labels", "grafana_dashboard") != "1" || str(cm.Inputs, "metadata", "annotations", "grafana_folder") != "GPU" {
			t.Errorf("dashboard %s: %v", uid, mappable(dig(cm.Inputs, "metadata")))
		}
	}
	children := 0
	for _, r := range m.Resources() {
		if strings.HasSuffix(r.Parent, "GPUPlatform::gpu") {
			children++
			if !strings.Contains(r.Provider, "::workload::") {
				t.Errorf("%s is bound to %q, want the workload provider", r.Name, r.Provider)
			}
		}
	}
	if children < 5 { // namespace, rules, two dashboards, a chart at least
		t.Errorf("only %d resources under the GPU platform component", children)
	}
}
