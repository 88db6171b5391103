package tests

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/stacks/automation"
)

// The dev stack rendered through the real engine (automation.Render, what
// make preview and the publish step run): every file sits in the layer of
// its kind and carries that layer's sync wave, a custom resource never
// comes before its CRD, cluster-scoped files carry no "default", the real
// kustomize builds each tree with Namespaces and CRDs first, the Argo CD
// Applications sync the trees that exist, and an ExternalSecret stands for
// every Secret the render leaves out. Then the model-upgrade flow: a new
// vLLM image tag changes exactly the model server's Deployment file.
func TestRenderedDevStackSyncsInOrder(t *testing.T) {
	t.Parallel()
	e, _ := recordingEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "rendered")
	cfg := devConfig(t, dir)
	r, err := automation.Render(ctx, "dev", cfg, e)
	if err != nil {
		t.Fatal(err)
	}

	crdWave := map[string]int{} // group/kind -> wave of its CRD in the tree
	type object struct {
		file, apiVersion, kind, name, namespace string
		wave                                    int
		spec                                    map[string]any
	}
	trees := map[string][]object{}
	for _, tree := range gitops.Trees {
		err := filepath.WalkDir(filepath.Join(dir, tree), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Base(p) == "kustomization.yaml" {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var o map[string]any
			if err := yaml.Unmarshal(b, &o); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			meta := o["metadata"].(map[string]any)
			ann, _ := meta["annotations"].(map[string]any)
			wave, err := strconv.Atoi(fmt.Sprint(ann[gitops.SyncWave]))
			if err != nil {
				t.Errorf("%s: no sync wave (%v)", p, ann)
			}
			obj := object{file: p, apiVersion: o["apiVersion"].(string), kind: o["kind"].(string), name: meta["name"].(string), wave: wave}
			obj.namespace, _ = meta["namespace"].(string)
			obj.spec, _ = o["spec"].(map[string]any)
			layer := gitops.Place(o)
			if filepath.Base(filepath.Dir(p)) != layer.Dir || wave != layer.Wave {
				t.Errorf("%s (%s %s): in %s with wave %d, want %s with wave %d", p, obj.apiVersion, obj.kind, filepath.Base(filepath.Dir(p)), wave, layer.Dir, layer.Wave)
			}
			if obj.namespace == "" && strings.Contains(filepath.Base(p), "-default-") {
				t.Errorf("%s: a cluster-scoped object's file name carries default", p)
			}
			if obj.kind == "CustomResourceDefinition" {
				names := obj.spec["names"].(map[string]any)
				crdWave[obj.spec["group"].(string)+"/"+names["kind"].(string)] = wave
			}
			trees[tree] = append(trees[tree], obj)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, objs := range trees {
		for _, o := range objs {
			group, _, _ := strings.Cut(o.apiVersion, "/")
			if w, ok := crdWave[group+"/"+o.kind]; ok && w >= o.wave {
				t.Errorf("%s: wave %d, not after its CRD's %d", o.file, o.wave, w)
			}
		}
	}
	for _, tree := range []string{"workload", "management"} {
		res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(dir, tree))
		if err != nil {
			t.Fatalf("kustomize build %s: %v", tree, err)
		}
		var kinds []string
		for _, o := range res.Resources() {
			kinds = append(kinds, o.GetKind())
		}
		if len(kinds) != len(trees[tree]) {
			t.Errorf("kustomize build %s: %d objects, %d files", tree, len(kinds), len(trees[tree]))
		}
		last := slices.IndexFunc(kinds, func(k string) bool { return k != "Namespace" && k != "CustomResourceDefinition" })
		if slices.ContainsFunc(kinds[max(last, 0):], func(k string) bool { return k == "Namespace" || k == "CustomResourceDefinition" }) {
			t.Errorf("kustomize build %s: a Namespace or CRD after other objects: %v", tree, kinds)
		}
	}
	apps := map[string]string{}
	for _, o := range trees["gitops"] {
		if o.kind == "Application" {
			apps[o.name] = o.spec["source"].(map[string]any)["path"].(string)
		}
	}
	if len(apps) != 2 || apps["dev-gpu-workload"] != "clusters/acme/gpu/workload" || apps["dev-gpu-management"] != "clusters/acme/gpu/management" {
		t.Errorf("Applications %v: one per tree of the dev stack", apps)
	}
	external := map[string]bool{}
	for _, o := range trees["workload"] {
		if o.kind == "ExternalSecret" {
			external[o.namespace+"/"+o.name] = true
		}
	}
	for _, e := range r.ExternalSecrets.([]any) {
		e := e.(map[string]any)
		if !external[fmt.Sprint(e["namespace"], "/", e["name"])] {
			t.Errorf("no ExternalSecret for %v", e)
		}
	}
	// the API key, the storage keys, Velero's keys, the pgvector's
	// credentials in its namespace, the serving one and its client's, and
	// its backup store's keys
	if len(external) != 7 {
		t.Errorf("ExternalSecrets %v, want 7", external)
	}

	// A new vLLM release: only the model server's Deployment changes.
	repo, _, _ := strings.Cut(serving.DefaultImage, ":")
	cfg.Serving.Image = repo + ":v0.11.1"
	again, err := automation.Render(ctx, "dev", cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join("workload", gitops.Place(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"runtimeClassName": "nvidia"}}}}).Dir, gitops.FileName("apps/v1", "Deployment", "models", serving.DeploymentName("llama3-8b")))}
	if !slices.Equal(again.Changed, want) || len(again.Added)+len(again.Removed) > 0 {
		t.Errorf("a new image tag changed %v, added %v, removed %v; want exactly %v", again.Changed, again.Added, again.Removed, want)
	}
}
