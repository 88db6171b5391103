package gitops

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// SyncWave is Argo CD's sync-wave annotation.
const SyncWave = "argocd.argoproj.io/sync-wave"

// Trees are the folders of a render directory that Arrange lays out.
var Trees = []string{WorkloadTree, ManagementTree, "gitops"}

// Arrange lays out each rendered tree under renderDir (workload/,
// management/, gitops/ as the Kubernetes provider wrote them: 0-crd/ and
// 1-manifest/) for delivery in order:
//   - each object moves into its layer's folder (Layers) and carries the
//     layer's Argo CD sync wave;
//   - a cluster-scoped object's file name holds no namespace (the provider
//     writes "default" there);
//   - each layer gets a kustomization.yaml listing its files, and the tree
//     one listing its layers in order, so `kubectl apply -k` of a layer, and
//     Argo CD and Flux, take the files as they are. Every layer folder is
//     written, empty or not, since Flux's Kustomizations name them all.
//
// A tree the render did not write is left out.
func Arrange(renderDir string) error {
	for _, tree := range Trees {
		dir := filepath.Join(renderDir, tree)
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			continue
		}
		if err := arrangeTree(dir); err != nil {
			return fmt.Errorf("arrange %s: %w", dir, err)
		}
	}
	return nil
}

func arrangeTree(dir string) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") && filepath.Base(p) != "kustomization.yaml" {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	out := map[string]map[string][]byte{} // layer dir -> file -> content
	for _, l := range Layers {
		out[l.Dir] = map[string][]byte{}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(b, &obj); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		apiVersion, _ := obj["apiVersion"].(string)
		kind, _ := obj["kind"].(string)
		meta, _ := obj["metadata"].(map[string]any)
		if kind == "" || meta == nil {
			return fmt.Errorf("%s: not a Kubernetes object", f)
		}
		layer := Place(obj)
		annotations, _ := meta["annotations"].(map[string]any)
		if annotations == nil {
			annotations = map[string]any{}
		}
		annotations[SyncWave] = strconv.Itoa(layer.Wave)
		meta["annotations"] = annotations
		content, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		name := FileName(apiVersion, kind, str(meta["namespace"]), str(meta["name"]))
		if _, dup := out[layer.Dir][name]; dup {
			return fmt.Errorf("two objects would be written to %s", name)
		}
		out[layer.Dir][name] = content
	}
	// Replace the tree's folders with the layers.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	var layers []string
	for _, l := range Layers {
		ld := filepath.Join(dir, l.Dir)
		if err := os.MkdirAll(ld, 0o755); err != nil {
			return err
		}
		names := slices.Sorted(maps.Keys(out[l.Dir]))
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(ld, n), out[l.Dir][n], 0o644); err != nil {
				return err
			}
		}
		if err := writeKustomization(ld, names); err != nil {
			return err
		}
		layers = append(layers, l.Dir)
	}
	return writeKustomization(dir, layers)
}

// FileName is an object's file name: group_version-kind[-namespace]-name,
// lower case, as the Kubernetes provider names them, without the
// "default" it writes for cluster-scoped objects.
func FileName(apiVersion, kind, namespace, name string) string {
	parts := []string{strings.ReplaceAll(apiVersion, "/", "_"), kind}
	if namespace != "" {
		parts = append(parts, namespace)
	}
	parts = append(parts, name)
	return strings.ToLower(strings.Join(parts, "-")) + ".yaml"
}

func writeKustomization(dir string, resources []string) error {
	list := make([]any, len(resources))
	for i, r := range resources {
		list[i] = r
	}
	b, err := yaml.Marshal(map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
		"resources": list,
		// kustomize's legacy order: Namespaces, then CRDs, ..., webhook
		// configurations last, whatever the files' names
		"sortOptions": map[string]any{"order": "legacy"},
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), b, 0o644)
}

func str(v any) string { s, _ := v.(string); return s }
