package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// Where the DCGM exporter reads its fields (dcgm-exporter 4.5.3-4.8.2
// pkg/cmd/app.go and internal/pkg/counters/counter_config.go,
// GetCounterSet): from the key "metrics" of the ConfigMap named
// <namespace>:<name> by -m/--configmap-data (DCGM_EXPORTER_CONFIGMAP_DATA)
// when it is not "none"; else from the file -f/--collectors
// (DCGM_EXPORTER_COLLECTORS), the image's default counters by default. A
// flag on the command line wins over its variable (urfave/cli v2).
const (
	collectorsEnv      = "DCGM_EXPORTER_COLLECTORS"
	configMapDataEnv   = "DCGM_EXPORTER_CONFIGMAP_DATA"
	imageDefaultCounts = "/etc/dcgm-exporter/default-counters.csv"
)

// The GPU operator's rule for its exporter (gpu-operator v26.7.0):
// assets/state-dcgm-exporter/0800_daemonset.yaml starts the container with
// DCGM_EXPORTER_COLLECTORS=/etc/dcgm-exporter/dcp-metrics-included.csv;
// controllers/object_controls.go TransformDCGMExporter, when
// spec.dcgmExporter.config.name is set, mounts that ConfigMap's key
// dcgm-metrics.csv at /etc/dcgm-exporter/dcgm-metrics.csv and points the
// variable there; spec.dcgmExporter.env is applied last. The exporter is
// on unless spec.dcgmExporter.enabled is false (IsEnabled).
const (
	operatorCollectors = "/etc/dcgm-exporter/dcp-metrics-included.csv"
	operatorMetricsKey = "dcgm-metrics.csv"
)

// exporter is one DCGM exporter a render installs, as the pod it runs.
type exporter struct {
	who       string
	namespace string
	pod       corev1.PodSpec
}

// operatorExporter is the exporter pod the GPU operator makes from a
// ClusterPolicy, by its rule above, in the operator's namespace.
func operatorExporter(cp *unstructured.Unstructured, namespace string) (exporter, bool) {
	if on, set, _ := unstructured.NestedBool(cp.Object, "spec", "dcgmExporter", "enabled"); set && !on {
		return exporter{}, false
	}
	c := corev1.Container{Name: "nvidia-dcgm-exporter", Env: []corev1.EnvVar{{Name: collectorsEnv, Value: operatorCollectors}}}
	var vols []corev1.Volume
	if name, _, _ := unstructured.NestedString(cp.Object, "spec", "dcgmExporter", "config", "name"); name != "" {
		mount := "/etc/dcgm-exporter/" + operatorMetricsKey
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "metrics-config", MountPath: mount, SubPath: operatorMetricsKey})
		vols = append(vols, corev1.Volume{Name: "metrics-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
			Items:                []corev1.KeyToPath{{Key: operatorMetricsKey, Path: operatorMetricsKey}},
		}}})
		setEnv(&c, collectorsEnv, mount)
	}
	env, _, _ := unstructured.NestedSlice(cp.Object, "spec", "dcgmExporter", "env")
	for _, e := range env {
		m, _ := e.(map[string]any)
		name, _ := m["name"].(string)
		value, _ := m["value"].(string)
		setEnv(&c, name, value)
	}
	return exporter{"ClusterPolicy/" + cp.GetName(), namespace, corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: vols}}, true
}

func setEnv(c *corev1.Container, name, value string) {
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i].Value = value
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}

// exporters are the DCGM exporters of a render: DaemonSets running the
// exporter image, and the exporter each ClusterPolicy makes.
func exporters(objs []layered) []exporter {
	operatorNS := ""
	for _, lo := range objs {
		if spec, _, ok := podSpecOf(lo.o); ok && lo.o.GetKind() == "Deployment" && runsImage(spec, "/gpu-operator") {
			operatorNS = lo.o.GetNamespace()
		}
	}
	var out []exporter
	for _, lo := range objs {
		o := lo.o
		if o.GetKind() == "ClusterPolicy" && strings.HasPrefix(o.GetAPIVersion(), "nvidia.com/") {
			if e, ok := operatorExporter(o, operatorNS); ok {
				out = append(out, e)
			}
		}
		if spec, _, ok := podSpecOf(o); ok && o.GetKind() == "DaemonSet" && runsImage(spec, "/dcgm-exporter") {
			out = append(out, exporter{"DaemonSet/" + o.GetNamespace() + "/" + o.GetName(), o.GetNamespace(), *spec})
		}
	}
	return out
}

func runsImage(spec *corev1.PodSpec, repo string) bool {
	return slices.ContainsFunc(spec.Containers, func(c corev1.Container) bool { return strings.Contains(c.Image, repo+":") })
}

// exporterSetting is an exporter flag's value as the container gives it:
// on its command line (-name, --name, with the value next or after =),
// else in its variable, else def.
func exporterSetting(c corev1.Container, names []string, env, def string) string {
	argv := append(slices.Clone(c.Command), c.Args...)
	for i, a := range argv {
		for _, n := range names {
			for _, flag := range []string{"-" + n, "--" + n} {
				if a == flag && i+1 < len(argv) {
					return argv[i+1]
				}
				if v, ok := strings.CutPrefix(a, flag+"="); ok {
					return v
				}
			}
		}
	}
	for _, e := range c.Env {
		if e.Name == env {
			return e.Value
		}
	}
	return def
}

// exportedFields are the fields an exporter emits: the file it reads,
// from the ConfigMap mounted there (whole-volume or subPath mounts) in the
// render, else from the image (only its default counters are known,
// defaults). A problem says why the fields are unknown.
func exportedFields(e exporter, objs []layered, defaults []string) ([]string, string) {
	if len(e.pod.Containers) == 0 {
		return nil, e.who + " runs no container"
	}
	c := e.pod.Containers[0]
	if ref := exporterSetting(c, []string{"m", "configmap-data"}, configMapDataEnv, "none"); ref != "none" {
		ns, name, _ := strings.Cut(ref, ":")
		return configMapFields(e.who, "metrics", objs, ns, name, "ConfigMap "+ref)
	}
	file := exporterSetting(c, []string{"f", "collectors"}, collectorsEnv, imageDefaultCounts)
	for _, m := range c.VolumeMounts {
		key := ""
		switch {
		case m.MountPath == file && m.SubPath != "":
			key = m.SubPath
		case path.Dir(file) == path.Clean(m.MountPath) && m.SubPath == "":
			key = path.Base(file)
		default:
			continue
		}
		i := slices.IndexFunc(e.pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 || e.pod.Volumes[i].ConfigMap == nil {
			return nil, fmt.Sprintf("%s reads %s from volume %s, which is no ConfigMap of the pod", e.who, file, m.Name)
		}
		cm := e.pod.Volumes[i].ConfigMap
		for _, it := range cm.Items { // items map a key to a path in the volume
			if it.Path == key {
				key = it.Key
			}
		}
		return configMapFields(e.who, key, objs, e.namespace, cm.Name, file)
	}
	if file == imageDefaultCounts {
		return defaults, ""
	}
	return nil, fmt.Sprintf("%s reads %s from its image, whose fields are not known here", e.who, file)
}

// configMapFields are the fields in key of ConfigMap ns/name of the render,
// which the exporter reads as what.
func configMapFields(who, key string, objs []layered, ns, name, what string) ([]string, string) {
	for _, lo := range objs {
		if lo.o.GetKind() == "ConfigMap" && lo.o.GetName() == name && lo.o.GetNamespace() == ns {
			data, ok, _ := unstructured.NestedString(lo.o.Object, "data", key)
			if !ok {
				return nil, fmt.Sprintf("%s reads %s from key %s of ConfigMap %s/%s, which has no such key", who, what, key, ns, name)
			}
			names, err := platform.CSVFieldNames(data)
			if err != nil {
				return nil, fmt.Sprintf("%s reads %s from ConfigMap %s/%s, which the exporter refuses: %v", who, what, ns, name, err)
			}
			return names, ""
		}
	}
	return nil, fmt.Sprintf("%s reads %s from ConfigMap %s/%s, which the render does not have", who, what, ns, name)
}

// metricReaders are the PromQL expressions of a render's alert rules and
// dashboards, by where they are.
func metricReaders(objs []layered) map[string]string {
	out := map[string]string{}
	for _, lo := range objs {
		o := lo.o
		switch {
		case o.GetKind() == "PrometheusRule":
			groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
			for _, g := range groups {
				rules, _ := g.(map[string]any)["rules"].([]any)
				for _, r := range rules {
					r, _ := r.(map[string]any)
					name, _ := r["alert"].(string)
					if name == "" {
						name, _ = r["record"].(string)
					}
					if expr, ok := r["expr"].(string); ok {
						out["PrometheusRule/"+o.GetName()+"/"+name] = expr
					}
				}
			}
		case o.GetKind() == "ConfigMap" && o.GetLabels()[platform.DashboardLabel] == platform.DashboardLabelValue:
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			for file, text := range data {
				var model any
				if err := json.Unmarshal([]byte(text), &model); err != nil {
					out["ConfigMap/"+o.GetName()+"/"+file] = "invalid dashboard JSON: " + err.Error()
					continue
				}
				dashboardExprs(model, "ConfigMap/"+o.GetName()+"/"+file, out)
			}
		}
	}
	return out
}

// dashboardExprs collects the expr of every Prometheus target in a
// dashboard model (Loki targets carry LogQL, not PromQL).
func dashboardExprs(v any, where string, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		if title, ok := v["title"].(string); ok {
			where += "/" + title
		}
		if expr, ok := v["expr"].(string); ok {
			if ds, _ := v["datasource"].(map[string]any); ds == nil || ds["type"] != "loki" {
				out[where+"/"+fmt.Sprint(v["refId"])] = expr
			}
		}
		for _, c := range v {
			dashboardExprs(c, where, out)
		}
	case []any:
		for _, c := range v {
			dashboardExprs(c, where, out)
		}
	}
}

// metricsExported: every DCGM metric an alert rule or dashboard of the
// render reads is emitted by every DCGM exporter the render installs, as
// that exporter is configured (defaults: the image's default counters).
func metricsExported(objs []layered, defaults []string) []string {
	readers := metricReaders(objs)
	needs := map[string][]string{} // metric -> readers
	var problems []string
	for where, expr := range readers {
		e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %q is no PromQL: %v", where, expr, err))
			continue
		}
		for _, sel := range parser.ExtractSelectors(e) {
			for _, m := range sel {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual && strings.HasPrefix(m.Value, "DCGM_") {
					needs[m.Value] = append(needs[m.Value], where)
				}
			}
		}
	}
	if len(needs) == 0 {
		return problems
	}
	exps := exporters(objs)
	if len(exps) == 0 {
		problems = append(problems, "the render reads DCGM metrics but installs no DCGM exporter")
	}
	for _, e := range exps {
		fields, why := exportedFields(e, objs, defaults)
		if why != "" {
			problems = append(problems, why)
			continue
		}
		for metric, who := range needs {
			if !slices.Contains(fields, metric) {
				sort.Strings(who)
				problems = append(problems, fmt.Sprintf("%s does not export %s, which %s reads", e.who, metric, strings.Join(who, ", ")))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// imageDefaultCounters are the fields of the exporter image's own
// default-counters.csv (NVIDIA/dcgm-exporter etc/, in the shared
// reference data).
func imageDefaultCounters(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(pulumitest.SharedDir(t), "reference", "dcgm-exporter-default-counters.csv"))
	if err != nil {
		t.Fatal(err)
	}
	names, err := platform.CSVFieldNames(string(raw))
	if err != nil || len(names) < 10 {
		t.Fatalf("the exporter's default counters: %v %v", names, err)
	}
	return names
}

// The metric invariant judges the exporter each GPU stack installs, as the
// exporter and the GPU operator would configure it: on dev (the operator's
// exporter) and prod (the dcgm-exporter chart) the render passes, and each
// way of losing a metric is named: the operator left on its own metrics
// file, a metrics file the exporter refuses (the help text with a comma
// that the program shipped before), the XID count dropped, the chart's
// exporter without our file mounted.
func TestInvariantsSeeAnUnexportedMetric(t *testing.T) {
	t.Parallel()
	type mutation struct {
		name string
		edit func(o *unstructured.Unstructured)
		want string
	}
	editMetrics := func(kind, name, key string, edit func(string) string) func(o *unstructured.Unstructured) {
		return func(o *unstructured.Unstructured) {
			if o.GetKind() == kind && o.GetName() == name {
				v, _, _ := unstructured.NestedString(o.Object, "data", key)
				_ = unstructured.SetNestedField(o.Object, edit(v), "data", key)
			}
		}
	}
	withoutXIDCount := func(csv string) string {
		var keep []string
		for _, l := range strings.Split(csv, "\n") {
			if !strings.HasPrefix(l, "DCGM_EXP_XID_ERRORS_COUNT") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	asShippedBefore := func(csv string) string {
		return strings.Replace(csv, "(5 min) by xid.", "(5 min), by xid.", 1)
	}
	for _, tc := range []struct {
		stack, exporter string
		mutations       []mutation
	}{
		{"dev", "ClusterPolicy/", []mutation{
			{"the operator's own file", func(o *unstructured.Unstructured) {
				if o.GetKind() == "ClusterPolicy" {
					unstructured.RemoveNestedField(o.Object, "spec", "dcgmExporter", "config")
				}
			}, "reads " + operatorCollectors + " from its image"},
			{"a file the exporter refuses", editMetrics("ConfigMap", platform.DCGMMetricsConfigMap, operatorMetricsKey, asShippedBefore), "which the exporter refuses"},
			{"no XID count", editMetrics("ConfigMap", platform.DCGMMetricsConfigMap, operatorMetricsKey, withoutXIDCount), "does not export DCGM_EXP_XID_ERRORS_COUNT, which PrometheusRule/"},
		}},
		{"prod", "DaemonSet/", []mutation{
			{"the chart's exporter on the image's counters", func(o *unstructured.Unstructured) {
				if o.GetKind() != "DaemonSet" || !strings.Contains(o.GetName(), "dcgm-exporter") {
					return
				}
				cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				c := cs[0].(map[string]any)
				var mounts []any
				for _, m := range c["volumeMounts"].([]any) {
					if !strings.HasPrefix(m.(map[string]any)["mountPath"].(string), "/etc/dcgm-exporter/") {
						mounts = append(mounts, m)
					}
				}
				c["volumeMounts"] = mounts
				_ = unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", "containers")
			}, "does not export DCGM_EXP_XID_ERRORS_COUNT, which PrometheusRule/"},
			{"a file the exporter refuses", editMetrics("ConfigMap", "exporter-metrics-config-map", "metrics", asShippedBefore), "which the exporter refuses"},
		}},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			t.Parallel()
			dir, _ := renderFor(t, tc.stack, gitops.Flux, "") // checks the invariants as rendered
			defaults := imageDefaultCounters(t)
			objs := treeObjects(t, dir)
			exps := exporters(objs)
			if len(exps) != 1 || !strings.HasPrefix(exps[0].who, tc.exporter) {
				t.Fatalf("want one %s exporter, found %v", tc.exporter, exps)
			}
			if fields, why := exportedFields(exps[0], objs, defaults); why != "" || !slices.Contains(fields, "DCGM_EXP_XID_ERRORS_COUNT") {
				t.Fatalf("the exporter's fields as rendered: %v %s", fields, why)
			}
			if len(metricReaders(objs)) < 10 {
				t.Fatalf("the render's alert rules and dashboards: %v", metricReaders(objs))
			}
			for _, m := range tc.mutations {
				objs := treeObjects(t, dir)
				for _, lo := range objs {
					m.edit(lo.o)
				}
				problems := strings.Join(metricsExported(objs, defaults), "\n")
				if !strings.Contains(problems, m.want) {
					t.Errorf("%s: the invariant does not say %q:\n%s", m.name, m.want, problems)
				}
			}
		})
	}
}
