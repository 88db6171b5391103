package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/stackfile"
)

const design = `# qwen3-8b on h100-80gb-x8: tensorParallel 1.
  gpu-node-pools:models:
  - {name: qwen3-8b, pool: serve, source: "s3://models/Qwen/Qwen3-8B", model: qwen3-8b, minReplicas: 1}
  gpu-node-pools:pools:
  - {name: serve, sku: h100-80gb-x8, minNodes: 1, maxNodes: 1}
  gpu-node-pools:storage:
    kind: s3
`

// add-model merges a design and lists each missing value with the command
// that sets it (secrets with --secret); a second design with the same
// pool name is refused, leaving the file as it was, until -pool renames it.
func TestAddModel(t *testing.T) {
	t.Parallel()
	dir := stacktest.Project(t, map[string]string{"acme": stacktest.NatronRenderHead})
	var out, errs bytes.Buffer
	if code := run([]string{"add-model", "-stack", "acme"}, dir, strings.NewReader(design), &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	for _, want := range []string{
		"    pulumi config set --path gpu-node-pools:storage.endpoint <value> --stack acme\n",
		"    pulumi config set --secret --path gpu-node-pools:storage.accessKey <value> --stack acme\n",
		"    pulumi config set --secret --path gpu-node-pools:storage.secretKey <value> --stack acme\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	merged, err := os.ReadFile(stackfile.Path(dir, "acme"))
	if err != nil {
		t.Fatal(err)
	}
	errs.Reset()
	if code := run([]string{"add-model", "-stack", "acme"}, dir, strings.NewReader(design), &out, &errs); code != 1 || !strings.Contains(errs.String(), `"serve" exists in the stack file already`) {
		t.Errorf("the same pool twice: exit %d, %s", code, errs.String())
	}
	if again, _ := os.ReadFile(stackfile.Path(dir, "acme")); !bytes.Equal(again, merged) {
		t.Error("a refused design changed the file")
	}
	renamed := strings.ReplaceAll(design, "qwen3-8b,", "qwen3-8b-b,")
	if code := run([]string{"add-model", "-stack", "acme", "-pool", "serve2"}, dir, strings.NewReader(renamed), &out, &errs); code != 0 {
		t.Fatalf("-pool: exit %d: %s", code, errs.String())
	}
	final, _ := os.ReadFile(stackfile.Path(dir, "acme"))
	if !strings.Contains(string(final), "name: serve2") || !strings.Contains(string(final), "pool: serve2") {
		t.Errorf("-pool did not rename the pool and the model's pool:\n%s", final)
	}
}
