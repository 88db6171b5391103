package stackfile

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

const mergeBase = `# Stack acme: a comment kept.
config:
  gpu-node-pools:target: natron
  gpu-node-pools:pools:
    - name: a100 # at most 12 letters
      sku: a100-80gb-x8
      minNodes: 0
      maxNodes: 2
  gpu-node-pools:storage:
    kind: s3
    endpoint: https://s3.example
  # Model serving: a comment kept too.
`

const mergeDesign = `# llama-3.1-8b on h100-80gb-x8: tensorParallel 1.
# Merge into a stack file.
  gpu-node-pools:models:
  - {name: llama, pool: serve, source: "s3://models/x", model: llama-3.1-8b}
  gpu-node-pools:pools:
  - {name: serve, sku: h100-80gb-x8, minNodes: 1, maxNodes: 1}
  gpu-node-pools:pricing:
    prices: {h100-80gb-x8: 20}
  gpu-node-pools:storage:
    kind: s3
`

// A design merges into a stack file as data (the pool appended, a block
// added, the storage block's kind agreeing) and the file keeps its
// comments; the design's summary line heads what it added.
func TestMerge(t *testing.T) {
	got, err := Merge([]byte(mergeBase), []byte(mergeDesign))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"config": map[string]any{
		"gpu-node-pools:target": "natron",
		"gpu-node-pools:pools": []any{
			map[string]any{"name": "a100", "sku": "a100-80gb-x8", "minNodes": 0.0, "maxNodes": 2.0},
			map[string]any{"name": "serve", "sku": "h100-80gb-x8", "minNodes": 1.0, "maxNodes": 1.0},
		},
		"gpu-node-pools:storage": map[string]any{"kind": "s3", "endpoint": "https://s3.example"},
		"gpu-node-pools:models":  []any{map[string]any{"name": "llama", "pool": "serve", "source": "s3://models/x", "model": "llama-3.1-8b"}},
		"gpu-node-pools:pricing": map[string]any{"prices": map[string]any{"h100-80gb-x8": 20.0}},
	}}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("merged (-want +got):\n%s\n%s", diff, got)
	}
	for _, c := range []string{"# Stack acme: a comment kept.", "# at most 12 letters", "# Model serving: a comment kept too.", "# llama-3.1-8b on h100-80gb-x8: tensorParallel 1."} {
		if !strings.Contains(string(got), c) {
			t.Errorf("lost %q:\n%s", c, got)
		}
	}
	if strings.Contains(string(got), "Merge into a stack file") {
		t.Errorf("the design's instructions went into the file:\n%s", got)
	}
}

// Conflicts are all reported, naming the key, and nothing merges.
func TestMergeConflicts(t *testing.T) {
	design := `gpu-node-pools:pools:
  - {name: a100, sku: h100-80gb-x8, minNodes: 1, maxNodes: 1}
gpu-node-pools:storage:
  kind: azureBlob
`
	_, err := Merge([]byte(mergeBase), []byte(design))
	for _, want := range []string{`gpu-node-pools:pools: "a100" exists in the stack file already`, "gpu-node-pools:storage.kind: the stack file has s3, the design azureBlob"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in %v", want, err)
		}
	}
	if _, err := Merge([]byte(mergeBase), []byte("# nothing\n")); err == nil {
		t.Error("an empty design merged")
	}
}
