package tests

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/monitoring"
	"github.com/natron/gpu-node-pools/internal/testkit/delivery"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// scrapeCase is one of the program's ServiceMonitors beside the Services
// its chart renders in the monitor's namespace.
type scrapeCase struct {
	name     string
	monitor  map[string]any
	services []map[string]any
}

// scrapeCases are every ServiceMonitor the dev and prod stacks make, each
// with the real chart's Services, and one of a Qdrant database.
func scrapeCases(t *testing.T) []scrapeCase {
	t.Helper()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	// the Services of a release installed into ns (Helm gives the
	// objects a chart leaves without one the release's namespace)
	services := func(objs []map[string]any, ns string) []map[string]any {
		var out []map[string]any
		for _, o := range objs {
			if o["kind"] == "Service" {
				if md := o["metadata"].(map[string]any); md["namespace"] == nil {
					md["namespace"] = ns
				}
				out = append(out, o)
			}
		}
		return out
	}
	var cases []scrapeCase
	for _, stack := range []string{"dev", "prod"} {
		p := stackPlan(t, stack)
		ns := p.Serving.Options.Namespace
		var engineServices []map[string]any
		for _, e := range p.Serving.Engines {
			rel := serving.EngineRelease(helm.Source{}, e, serving.VLLMStackChart)
			engineServices = append(engineServices, services(rel.Apply(helmtest.RenderRelease(t, charts, rel, ns)), ns)...)
		}
		for _, e := range p.Serving.Engines {
			cases = append(cases, scrapeCase{stack + "/model " + e.Name, serving.EngineServiceMonitor(ns, e), engineServices})
		}
		for _, rel := range platform.Releases(p.Platform, p.Facts(), helm.Source{}) {
			if rel.Chart.Name == platform.DCGMExporterChart.Name {
				cases = append(cases, scrapeCase{stack + "/dcgm-exporter", platform.DCGMExporterServiceMonitor(p.Platform),
					services(helmtest.RenderRelease(t, charts, rel, p.Platform.Namespace), p.Platform.Namespace)})
			}
		}
	}
	var qdrantServices []map[string]any
	var monitors []scrapeCase
	for _, name := range []string{"search", "memory"} {
		s := vectordb.Spec{Name: name, Kind: vectordb.Qdrant, Namespace: "vector-dbs", Size: "10Gi", Replicas: 3}.Defaults()
		rel := helm.Release{Name: vectordb.QdrantRelease(s.Name), Chart: vectordb.QdrantChart, Dir: charts, Values: vectordb.QdrantValues(s)}
		qdrantServices = append(qdrantServices, services(helmtest.RenderRelease(t, charts, rel, s.Namespace), s.Namespace)...)
		monitors = append(monitors, scrapeCase{"qdrant " + name, vectordb.Monitor(s, nil), nil})
	}
	for _, m := range monitors {
		m.services = qdrantServices
		cases = append(cases, m)
	}
	return cases
}

// Every ServiceMonitor the program makes finds the one Service it is for
// among the Services beside it, delivered directly and under Argo CD's
// label tracking, which rewrites each Service's own
// app.kubernetes.io/instance: the engine's (whose queue depth KEDA scales
// on), DCGM's (the GPU alerts) and Qdrant's (whose headless Service has
// the same ports). The monitors once selected on that label, and found
// nothing under Argo CD.
func TestServiceMonitorsFindTheirServiceUnderArgoCD(t *testing.T) {
	t.Parallel()
	cases := scrapeCases(t)
	if len(cases) < 5 {
		t.Fatalf("only %d ServiceMonitors to check", len(cases))
	}
	for _, tracked := range []bool{false, true} {
		for _, tc := range cases {
			var found []string
			for _, svc := range tc.services {
				if tracked {
					svc = argoTracked(svc)
				}
				ok, err := delivery.Scrapes(tc.monitor, svc)
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					found = append(found, fmt.Sprint(svc["metadata"].(map[string]any)["name"]))
				}
			}
			if len(found) != 1 {
				t.Errorf("%s (Argo CD label tracking %v): scrapes %v of %d Services, want its one", tc.name, tracked, found, len(tc.services))
			}
		}
	}

	// the precondition: the old selector on app.kubernetes.io/instance
	// finds the engine's Service as the chart renders it, and not once
	// Argo CD has tracked it
	p := stackPlan(t, "prod")
	e := p.Serving.Engines[0]
	old := monitoring.ServiceMonitor("old", p.Serving.Options.Namespace, nil,
		map[string]string{delivery.AppInstanceLabel: serving.Release(e.Name), "app.kubernetes.io/component": "serving-engine"}, "metrics", "15s")
	for _, tc := range cases {
		if tc.name != "prod/model "+e.Name {
			continue
		}
		for _, svc := range tc.services {
			before, _ := delivery.Scrapes(old, svc)
			after, _ := delivery.Scrapes(old, argoTracked(svc))
			if svc["metadata"].(map[string]any)["name"] == serving.ServiceName(e.Name) && (!before || after) {
				t.Errorf("the old selector scrapes the engine's Service: %v as rendered, %v under label tracking; want true, false", before, after)
			}
		}
	}
}

// argoTracked is a copy of obj as Argo CD's label tracking applies it.
func argoTracked(obj map[string]any) map[string]any {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		panic(err)
	}
	delivery.TrackByLabel(u, "gpu-node-pools-2-resources")
	return u.Object
}
