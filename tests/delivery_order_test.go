package tests

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// layerIndex is the apply position of a rendered file's layer folder.
func layerIndex(rel string) int {
	for i, l := range gitops.Layers {
		if strings.Contains(rel, "/"+l.Dir+"/") {
			return i
		}
	}
	return -1
}

// podReads are the Secrets and ConfigMaps a pod template reads, as
// "Secret/name" and "ConfigMap/name".
func podReads(spec map[string]any) []string {
	var out []string
	var containers []any
	for _, k := range []string{"initContainers", "containers"} {
		if c, ok := spec[k].([]any); ok {
			containers = append(containers, c...)
		}
	}
	for _, c := range containers {
		cm, _ := c.(map[string]any)
		for _, ef := range asList(cm["envFrom"]) {
			e, _ := ef.(map[string]any)
			if r, ok := e["secretRef"].(map[string]any); ok {
				out = append(out, "Secret/"+str1(r["name"]))
			}
			if r, ok := e["configMapRef"].(map[string]any); ok {
				out = append(out, "ConfigMap/"+str1(r["name"]))
			}
		}
		for _, ev := range asList(cm["env"]) {
			e, _ := ev.(map[string]any)
			vf, _ := e["valueFrom"].(map[string]any)
			if r, ok := vf["secretKeyRef"].(map[string]any); ok && r["optional"] != true {
				out = append(out, "Secret/"+str1(r["name"]))
			}
			if r, ok := vf["configMapKeyRef"].(map[string]any); ok && r["optional"] != true {
				out = append(out, "ConfigMap/"+str1(r["name"]))
			}
		}
	}
	for _, v := range asList(spec["volumes"]) {
		vm, _ := v.(map[string]any)
		if s, ok := vm["secret"].(map[string]any); ok && s["optional"] != true {
			out = append(out, "Secret/"+str1(s["secretName"]))
		}
		if s, ok := vm["configMap"].(map[string]any); ok && s["optional"] != true {
			out = append(out, "ConfigMap/"+str1(s["name"]))
		}
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }
func str1(v any) string  { s, _ := v.(string); return s }

// podTemplate is an object's pod spec, if it runs pods.
func podTemplate(o map[string]any) (map[string]any, bool) {
	switch o["kind"] {
	case "Deployment", "StatefulSet", "DaemonSet", "Job":
		s, ok := dig1(o, "spec", "template", "spec").(map[string]any)
		return s, ok
	case "CronJob":
		s, ok := dig1(o, "spec", "jobTemplate", "spec", "template", "spec").(map[string]any)
		return s, ok
	}
	return nil, false
}

func dig1(v any, path ...string) any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// Every Secret or ConfigMap a pod of the rendered workload tree reads is
// delivered no later than the pod: as an object of its layer or an earlier
// one, or by an ExternalSecret there (External Secrets Operator writes
// spec.target.name, else the ExternalSecret's name). A GitOps tool applies
// the layers in order and waits for each to be healthy (Argo CD sync waves,
// gitops-engine pkg/sync/sync_context.go; Flux dependsOn with wait): a pod
// whose Secret comes a layer later never starts, its layer never becomes
// healthy, and the later layer is never applied. Secrets made at run time
// by a controller of an earlier layer are named with the controller.
func TestDeliveryOrderProvidesWhatPodsRead(t *testing.T) {
	dir, _ := renderDev(t)
	provided := map[string]int{} // namespace/Kind/name -> layer
	type pod struct {
		where string
		layer int
		ns    string
		reads []string
	}
	var pods []pod
	err := filepath.WalkDir(filepath.Join(dir, gitops.WorkloadTree), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || d.Name() == "kustomization.yaml" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		layer := layerIndex("/" + filepath.ToSlash(rel))
		for _, doc := range bytes.Split(b, []byte("\n---")) {
			var o map[string]any
			if yaml.Unmarshal(doc, &o) != nil || o == nil {
				continue
			}
			ns, _ := dig1(o, "metadata", "namespace").(string)
			name, _ := dig1(o, "metadata", "name").(string)
			kind, _ := o["kind"].(string)
			provided[ns+"/"+kind+"/"+name] = layer
			if kind == "ExternalSecret" {
				target, _ := dig1(o, "spec", "target", "name").(string)
				provided[ns+"/Secret/"+cmpOr(target, name)] = layer
			}
			if spec, ok := podTemplate(o); ok {
				pods = append(pods, pod{rel, layer, ns, podReads(spec)})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) < 3 {
		t.Fatalf("found %d pod templates in the tree", len(pods))
	}
	checked := 0
	for _, p := range pods {
		for _, r := range slices.Compact(slices.Sorted(slices.Values(p.reads))) {
			checked++
			at, ok := provided[p.ns+"/"+r]
			switch {
			case !ok:
				t.Errorf("%s reads %s, which nothing in the tree delivers", p.where, r)
			case at > p.layer:
				t.Errorf("%s (layer %d) reads %s, delivered only in layer %d: the pod cannot start, and its layer never becomes healthy", p.where, p.layer+1, r, at+1)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no pod reads a Secret or ConfigMap: the check saw nothing")
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// An engine Deployment's progress deadline covers its model's cold start
// (a GPU node, the image, the weights: the wake route's readiness is the
// same budget). The chart's 1200 s (vllm-stack 0.1.12) made the Deployment
// ProgressDeadlineExceeded while its first replica was still coming up,
// which Argo CD judges Degraded (gitops-engine pkg/health/
// health_deployment.go) and Flux's wait a failure.
func TestEngineDeadlineCoversTheColdStart(t *testing.T) {
	dir, cfg := renderDev(t)
	p, err := plan.Resolve(cfg, "dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Serving.Engines) == 0 {
		t.Fatal("the dev stack serves no vLLM model")
	}
	for _, eng := range p.Serving.Engines {
		matches, _ := filepath.Glob(filepath.Join(dir, gitops.WorkloadTree, "*", "apps_v1-deployment-*-vllm-"+eng.Name+"-*.yaml"))
		if len(matches) != 1 {
			t.Fatalf("engine %s: %d Deployment files", eng.Name, len(matches))
		}
		b, err := os.ReadFile(matches[0])
		if err != nil {
			t.Fatal(err)
		}
		var dep map[string]any
		if err := yaml.Unmarshal(b, &dep); err != nil {
			t.Fatal(err)
		}
		deadline, _ := dig1(dep, "spec", "progressDeadlineSeconds").(float64)
		if cold := serving.ColdStartSeconds(eng); int(deadline) < cold {
			t.Errorf("engine %s: progressDeadlineSeconds %v, a cold start takes up to %d s: the Deployment goes Degraded on its first start", eng.Name, deadline, cold)
		}
	}
}

// renderDev renders the dev stack through the real engine into a fresh
// directory, and returns it with the config it rendered.
func renderDev(t *testing.T) (string, *config.Config) {
	t.Helper()
	e, _ := recordingEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "rendered")
	cfg := devConfig(t, dir)
	if _, err := automation.Render(ctx, "dev", cfg, e); err != nil {
		t.Fatal(err)
	}
	return dir, cfg
}
