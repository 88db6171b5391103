// Package helmtest renders real chart archives offline for tests. It stands
// apart from pulumitest so that tests which do not render charts (and the
// fuzzer, which instruments everything linked in) do not carry Helm.
package helmtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/helm"
)

// RenderChart renders a chart archive offline as `helm template` would (the
// chart's values schema, subchart conditions and kubeVersion apply) and
// returns its objects, CRDs of crds/ included when includeCRDs is set.
func RenderChart(t testing.TB, archive, release, namespace string, values map[string]any, includeCRDs bool) []map[string]any {
	t.Helper()
	chrt, err := loader.Load(archive)
	if err != nil {
		t.Fatal(err)
	}
	return render(t, chrt, archive, release, namespace, values, includeCRDs)
}

// RenderRelease renders a release the way the Pulumi provider does: nil
// leaves never reach it (Pulumi drops them), they come as the release's
// nulls values file, which the provider merges under the values
// (pulumi-kubernetes provider/pkg/helm/values.go, MergeValues) before Helm
// coalesces them with the chart's defaults.
func RenderRelease(t testing.TB, chartDir string, r helm.Release, namespace string) []map[string]any {
	t.Helper()
	var files map[string]any
	if err := yaml.Unmarshal([]byte(r.Nulls()), &files); err != nil {
		t.Fatal(err)
	}
	return RenderChart(t, r.Chart.Archive(chartDir), r.Name, namespace, helm.Merge(files, WithoutNulls(r.Values)), false)
}

// withoutNils is what reaches the provider of a values map.
// WithoutNulls is an object as the API server stores it: null fields (a
// chart's empty "key:") are dropped, in maps and in lists of maps.
func WithoutNulls(v map[string]any) map[string]any {
	out := map[string]any{}
	for k, e := range v {
		switch x := e.(type) {
		case nil:
		case map[string]any:
			out[k] = WithoutNulls(x)
		case []any:
			list := make([]any, len(x))
			for i, item := range x {
				if m, ok := item.(map[string]any); ok {
					item = WithoutNulls(m)
				}
				list[i] = item
			}
			out[k] = list
		default:
			out[k] = e
		}
	}
	return out
}

func render(t testing.TB, chrt *chart.Chart, archive, release, namespace string, values map[string]any, includeCRDs bool) []map[string]any {
	t.Helper()
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.DryRun, inst.ClientOnly, inst.Replace, inst.IncludeCRDs = true, true, true, includeCRDs
	inst.ReleaseName, inst.Namespace = release, namespace
	inst.KubeVersion, _ = chartutil.ParseKubeVersion("v1.33.0")
	inst.APIVersions = chartutil.VersionSet{"monitoring.coreos.com/v1"}
	rel, err := inst.Run(chrt, values)
	if err != nil {
		t.Fatalf("render %s: %v", archive, err)
	}
	var objs []map[string]any
	for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	return objs
}

// Get walks plain decoded YAML/JSON maps along path; nil where it ends.
func Get(o any, path ...string) any {
	for _, p := range path {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

// PodImages are the images of every container of the pod templates among
// rendered objects (Deployments, DaemonSets, Jobs: whatever has one).
func PodImages(objs []map[string]any) []string {
	var out []string
	for _, o := range objs {
		for _, key := range []string{"initContainers", "containers"} {
			cs, _ := Get(o, "spec", "template", "spec", key).([]any)
			for _, c := range cs {
				if img, ok := Get(c, "image").(string); ok {
					out = append(out, img)
				}
			}
		}
	}
	return out
}

// RenderSubchart renders a chart vendored inside a chart archive (path
// names each dependency down from the archive's chart, such as
// kube-prometheus-stack, grafana) with values as that chart's own, as
// `helm template` renders a chart directory.
func RenderSubchart(t testing.TB, archive string, path []string, release, namespace string, values map[string]any) []map[string]any {
	t.Helper()
	chrt, err := loader.Load(archive)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range path {
		var next *chart.Chart
		for _, d := range chrt.Dependencies() {
			if d.Name() == name {
				next = d
			}
		}
		if next == nil {
			t.Fatalf("%s: no subchart %s under %s", archive, name, chrt.Name())
		}
		chrt = next
	}
	// a copy without its parent renders as a chart of its own
	own := &chart.Chart{Raw: chrt.Raw, Metadata: chrt.Metadata, Lock: chrt.Lock, Templates: chrt.Templates,
		Values: chrt.Values, Schema: chrt.Schema, Files: chrt.Files}
	own.SetDependencies(chrt.Dependencies()...)
	return render(t, own, archive, release, namespace, values, false)
}

// CRDFile writes the CRDs a chart archive renders (as templates or from
// crds/, with its default values) to a file in the test's temporary
// directory, for kubeapi's ApplyCRDs.
func CRDFile(t testing.TB, archive string) string {
	t.Helper()
	release := strings.TrimSuffix(filepath.Base(archive), ".tgz")
	var docs []string
	for _, o := range RenderChart(t, archive, release, "default", nil, true) {
		if o["kind"] != "CustomResourceDefinition" {
			continue
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	f := filepath.Join(t.TempDir(), release+"-crds.yaml")
	if err := os.WriteFile(f, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
