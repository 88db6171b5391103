// Package helmtest renders real chart archives offline for tests. It stands
// apart from pulumitest so that tests which do not render charts (and the
// fuzzer, which instruments everything linked in) do not carry Helm.
package helmtest

import (
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
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
