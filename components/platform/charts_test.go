package platform_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// render renders a real upstream chart archive offline with the values the
// program produces, as `helm template` would, and returns its objects.
func render(t *testing.T, release helm.Release) []map[string]any {
	t.Helper()
	archive := release.Chart.Archive(filepath.Join(pulumitest.SharedDir(t), "charts"))
	return helmtest.RenderChart(t, archive, release.Name, "gpu-platform", release.Values, false)
}

func releaseOf(t *testing.T, rs []helm.Release, name string) helm.Release {
	t.Helper()
	for _, r := range rs {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no release %s in %v", name, rs)
	return helm.Release{}
}

var get = helmtest.Get

func ofKind(objs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

func hasToleration(tols any, key, operator, value, effect string) bool {
	list, _ := tols.([]any)
	for _, x := range list {
		m, _ := x.(map[string]any)
		if m["key"] == key && m["operator"] == operator && (value == "" || m["value"] == value) && m["effect"] == effect {
			return true
		}
	}
	return false
}

// checkGPUDaemonSet asserts the GPU placement rules on a rendered DaemonSet.
func checkGPUDaemonSet(t *testing.T, ds map[string]any, spot bool, mainContainer string) {
	t.Helper()
	name := get(ds, "metadata", "name")
	pod := get(ds, "spec", "template", "spec")
	tols := get(pod, "tolerations")
	if !hasToleration(tols, "nvidia.com/gpu", "Exists", "", "NoSchedule") {
		t.Errorf("%s: no GPU toleration in %v", name, tols)
	}
	if spot != hasToleration(tols, "kubernetes.azure.com/scalesetpriority", "Equal", "spot", "NoSchedule") {
		t.Errorf("%s: spot toleration present = %v, want %v", name, !spot, spot)
	}
	if get(pod, "nodeSelector", "nvidia.com/gpu.present") != "true" {
		t.Errorf("%s: nodeSelector %v", name, get(pod, "nodeSelector"))
	}
	found := false
	for _, c := range get(pod, "containers").([]any) {
		if get(c, "name") != mainContainer {
			continue
		}
		found = true
		for _, p := range [][]string{{"requests", "cpu"}, {"requests", "memory"}, {"limits", "cpu"}, {"limits", "memory"}} {
			if get(c, append([]string{"resources"}, p...)...) == nil {
				t.Errorf("%s/%s: no resources.%s", name, mainContainer, strings.Join(p, "."))
			}
		}
	}
	if !found {
		t.Errorf("%s: no container %s", name, mainContainer)
	}
}

func TestDevicePluginChartOnProd(t *testing.T) {
	t.Parallel()
	spec, pools := aksLayer(t)
	objs := render(t, releaseOf(t, platform.Releases(spec, pools, helm.Source{}), "nvidia-device-plugin"))
	dss := ofKind(objs, "DaemonSet")
	if len(dss) == 0 {
		t.Fatal("no DaemonSet rendered")
	}
	main := map[string]string{
		"nvidia-device-plugin":                    "nvidia-device-plugin-ctr",
		"nvidia-device-plugin-mps-control-daemon": "mps-control-daemon-ctr",
	}
	for _, ds := range dss {
		name, _ := get(ds, "metadata", "name").(string)
		if main[name] == "" {
			t.Errorf("unexpected DaemonSet %s", name)
			continue
		}
		checkGPUDaemonSet(t, ds, true, main[name])
	}
	// The MIG pool's nodes select a config of their own: the config map
	// brings the chart's config-manager containers, which chart 0.20.0
	// gives no resources (no value for them; README). Every other
	// container has requests and limits.
	configManager := map[string]bool{
		"nvidia-device-plugin-init": true, "nvidia-device-plugin-sidecar": true,
		"mps-control-daemon-init": true, "mps-control-daemon-sidecar": true,
	}
	for _, ds := range dss {
		pod := get(ds, "spec", "template", "spec")
		for _, key := range []string{"containers", "initContainers"} {
			cs, _ := get(pod, key).([]any)
			for _, c := range cs {
				if configManager[get(c, "name").(string)] {
					continue
				}
				if get(c, "resources", "limits", "memory") == nil || get(c, "resources", "requests", "cpu") == nil {
					t.Errorf("%v/%v has no requests and limits", get(ds, "metadata", "name"), get(c, "name"))
				}
			}
		}
	}
	// The MIG pool (nd96, MIG3g) runs the single strategy on its nodes,
	// every other node the default, none.
	cms := ofKind(objs, "ConfigMap")
	if len(cms) != 1 {
		t.Fatalf("want the device plugin's config map, got %v", cms)
	}
	got := map[string]string{}
	for k, v := range get(cms[0], "data").(map[string]any) {
		got[k] = strings.TrimSpace(v.(string))
	}
	if diff := cmp.Diff(map[string]string{
		"default": "flags:\n  migStrategy: none\nversion: v1",
		"nd96":    "flags:\n  migStrategy: single\nversion: v1",
	}, got); diff != "" {
		t.Errorf("device plugin configs (-want +got):\n%s", diff)
	}
	// No global strategy: MIG_STRATEGY would override every node's config.
	for _, ds := range dss {
		if strings.Contains(toJSON(ds), "MIG_STRATEGY") {
			t.Errorf("%s sets MIG_STRATEGY", get(ds, "metadata", "name"))
		}
	}
}

func TestDCGMExporterChartOnProd(t *testing.T) {
	t.Parallel()
	spec, pools := aksLayer(t)
	objs := render(t, releaseOf(t, platform.Releases(spec, pools, helm.Source{}), "dcgm-exporter"))
	dss := ofKind(objs, "DaemonSet")
	if len(dss) != 1 {
		t.Fatalf("want 1 DaemonSet, got %d", len(dss))
	}
	checkGPUDaemonSet(t, dss[0], true, "exporter")
	if sms := ofKind(objs, "ServiceMonitor"); len(sms) != 0 {
		t.Fatalf("the chart's ServiceMonitor is off (ours renders offline), got %d", len(sms))
	}
	// The program's ServiceMonitor must find the Service the chart rendered.
	sm := platform.DCGMExporterServiceMonitor(spec)
	svcs := ofKind(objs, "Service")
	if len(svcs) != 1 {
		t.Fatalf("want 1 Service, got %d", len(svcs))
	}
	checkServiceMonitorFinds(t, sm, svcs[0])
	ep := get(sm, "spec", "endpoints").([]any)[0]
	if get(sm, "metadata", "labels", "release") != "kube-prometheus-stack" || get(ep, "interval") != "15s" {
		t.Errorf("ServiceMonitor labels %v, interval %v", get(sm, "metadata", "labels"), get(ep, "interval"))
	}
	if rl := get(ep, "relabelings"); !strings.Contains(toJSON(rl), `"targetLabel":"node"`) {
		t.Errorf("ServiceMonitor relabelings %v lack the node label", rl)
	}
	// The exporter reads our metrics file (with the XID count the XID alert
	// needs): the chart's ConfigMap holds it, mounted where -f points.
	var metrics map[string]any
	for _, cm := range ofKind(objs, "ConfigMap") {
		if get(cm, "metadata", "name") == "exporter-metrics-config-map" {
			metrics = cm
		}
	}
	if got, _ := get(metrics, "data", "metrics").(string); strings.TrimSpace(got) != strings.TrimSpace(platform.DCGMMetrics) {
		t.Fatalf("the exporter's metrics ConfigMap does not hold the program's metrics file: %v", get(metrics, "data"))
	}
	c := get(dss[0], "spec", "template", "spec", "containers").([]any)[0]
	args, mounts, vols := toJSON(get(c, "args")), toJSON(get(c, "volumeMounts")), toJSON(get(dss[0], "spec", "template", "spec", "volumes"))
	if !strings.Contains(args, `"-f","/etc/dcgm-exporter/default-counters.csv"`) ||
		!strings.Contains(mounts, `"mountPath":"/etc/dcgm-exporter/default-counters.csv"`) ||
		!strings.Contains(vols, `"name":"exporter-metrics-config-map"`) {
		t.Errorf("the exporter does not read the metrics ConfigMap: args %s, mounts %s, volumes %s", args, mounts, vols)
	}
}

// checkServiceMonitorFinds asserts a ServiceMonitor's selector matches the
// Service's labels, in its namespace, on a port the Service has.
func checkServiceMonitorFinds(t *testing.T, sm, svc map[string]any) {
	t.Helper()
	labels, _ := get(svc, "metadata", "labels").(map[string]any)
	for k, v := range get(sm, "spec", "selector", "matchLabels").(map[string]any) {
		if labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%v, Service %v has %v", k, v, get(svc, "metadata", "name"), labels[k])
		}
	}
	port := get(sm, "spec", "endpoints").([]any)[0].(map[string]any)["port"]
	if !strings.Contains(toJSON(get(svc, "spec", "ports")), `"name":"`+port.(string)+`"`) {
		t.Errorf("Service %v has no port %v", get(svc, "metadata", "name"), port)
	}
}

func TestGPUOperatorChartOnDev(t *testing.T) {
	t.Parallel()
	spec, pools := bareMetalLayer(t)
	if spec.GPUStack != platform.GPUOperator {
		t.Fatalf("bare metal defaults to the GPU operator, got %s", spec.GPUStack)
	}
	objs := render(t, releaseOf(t, platform.Releases(spec, pools, helm.Source{}), "gpu-operator"))
	cps := ofKind(objs, "ClusterPolicy")
	if len(cps) != 1 {
		t.Fatalf("want 1 ClusterPolicy, got %d", len(cps))
	}
	cp := get(cps[0], "spec")
	if !hasToleration(get(cp, "daemonsets", "tolerations"), "nvidia.com/gpu", "Exists", "", "NoSchedule") {
		t.Errorf("operand tolerations: %v", get(cp, "daemonsets", "tolerations"))
	}
	// No strategy in the ClusterPolicy: the operator then sets no
	// MIG_STRATEGY and each node's device plugin config decides.
	if get(cp, "mig", "strategy") != nil || get(cp, "migManager", "enabled") != true {
		t.Errorf("MIG: %v, manager %v", get(cp, "mig"), get(cp, "migManager", "enabled"))
	}
	// The operator builds the operand DaemonSets from these specs: each must
	// carry requests and limits.
	for _, operand := range []string{"driver", "toolkit", "validator", "gfd", "nodeStatusExporter", "migManager", "devicePlugin", "dcgmExporter"} {
		for _, p := range [][]string{{"requests", "cpu"}, {"requests", "memory"}, {"limits", "cpu"}, {"limits", "memory"}} {
			if get(cp, append([]string{operand, "resources"}, p...)...) == nil {
				t.Errorf("ClusterPolicy %s: no resources.%s", operand, strings.Join(p, "."))
			}
		}
	}
	if get(cp, "driver", "enabled") != true || get(cp, "toolkit", "enabled") != true {
		t.Errorf("driver %v, toolkit %v", get(cp, "driver", "enabled"), get(cp, "toolkit", "enabled"))
	}
	if get(cp, "dcgmExporter", "serviceMonitor", "additionalLabels", "release") != "kube-prometheus-stack" || get(cp, "dcgmExporter", "serviceMonitor", "interval") != "15s" {
		t.Errorf("DCGM ServiceMonitor: %v", get(cp, "dcgmExporter", "serviceMonitor"))
	}
	// The operator mounts the metrics ConfigMap named here and points
	// DCGM_EXPORTER_COLLECTORS at its dcgm-metrics.csv
	// (controllers/object_controls.go, TransformDCGMExporter, at v26.7.0).
	if get(cp, "dcgmExporter", "config", "name") != platform.DCGMMetricsConfigMap {
		t.Errorf("DCGM exporter config: %v", get(cp, "dcgmExporter", "config"))
	}
	var metricsCM map[string]any
	for _, cm := range ofKind(objs, "ConfigMap") {
		if get(cm, "metadata", "name") == platform.DCGMMetricsConfigMap {
			metricsCM = cm
		}
	}
	if got := get(metricsCM, "data", "dcgm-metrics.csv"); got == nil || !strings.Contains(got.(string), "DCGM_EXP_XID_ERRORS_COUNT") {
		t.Errorf("the operator's DCGM metrics ConfigMap: %v", metricsCM)
	}
	if get(cp, "devicePlugin", "config", "name") != platform.DevicePluginConfigMap || get(cp, "devicePlugin", "config", "default") != "default" {
		t.Errorf("device plugin config: %v", get(cp, "devicePlugin", "config"))
	}
	var cfgMap map[string]any
	for _, cm := range ofKind(objs, "ConfigMap") {
		if get(cm, "metadata", "name") == platform.DevicePluginConfigMap {
			cfgMap = cm
		}
	}
	if cfgMap == nil || !strings.Contains(get(cfgMap, "data", "notebook").(string), "replicas: 4") {
		t.Errorf("time-slicing config map: %v", cfgMap)
	}
	if len(ofKind(objs, "Deployment")) == 0 {
		t.Error("no operator Deployment rendered")
	}
	// node-feature-discovery runs on the GPU nodes (the operator recognises
	// them by its labels): the worker tolerates the GPU taint.
	var worker map[string]any
	for _, ds := range ofKind(objs, "DaemonSet") {
		if strings.HasSuffix(get(ds, "metadata", "name").(string), "node-feature-discovery-worker") {
			worker = ds
		}
	}
	if worker == nil {
		t.Fatal("no node-feature-discovery worker rendered")
	}
	if !hasToleration(get(worker, "spec", "template", "spec", "tolerations"), "nvidia.com/gpu", "Exists", "", "NoSchedule") {
		t.Errorf("the NFD worker does not tolerate the GPU taint: %v", get(worker, "spec", "template", "spec", "tolerations"))
	}
}

// With nfd: existing the cluster's own node-feature-discovery labels the
// nodes, and the chart installs none.
func TestGPUOperatorWithExistingNFD(t *testing.T) {
	t.Parallel()
	_, pools := bareMetalLayer(t)
	spec := platform.Spec{NFD: platform.NFDExisting}.Defaults(platform.GPUOperator)
	for _, o := range render(t, releaseOf(t, platform.Releases(spec, pools, helm.Source{}), "gpu-operator")) {
		if strings.Contains(toJSON(get(o, "metadata", "labels")), "node-feature-discovery") {
			t.Fatalf("node-feature-discovery rendered (%v %v) though the cluster runs its own", o["kind"], get(o, "metadata", "name"))
		}
	}
	if slices.Contains(spec.Charts.GPUOperator.Images, "registry.k8s.io/nfd/node-feature-discovery") {
		t.Errorf("the chart pulls no NFD image then: %v", spec.Charts.GPUOperator.Images)
	}
}
