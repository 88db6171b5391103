package stacktest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// NatronRenderHead is the head of a bare-metal stack file that renders
// (no kubeconfigs needed), for tests to add pools and models to.
const NatronRenderHead = `config:
  gpu-node-pools:target: natron
  gpu-node-pools:renderDir: rendered
  gpu-node-pools:natron:
    site: natron-cloud
    clusterName: acme
    namespace: capi-acme
    kubernetesVersion: v1.33.4
    image: {url: "https://images.example/u.qcow2", checksum: "https://images.example/u.qcow2.sha256sum"}
`

// Project is a new project directory with the repository's Pulumi.yaml
// and the given stack files (stack name to its file's text).
func Project(t testing.TB, stacks map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	project, err := os.ReadFile(filepath.Join(pulumitest.RepoRoot(), "Pulumi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"Pulumi.yaml": string(project)}
	for stack, text := range stacks {
		files["Pulumi."+stack+".yaml"] = text
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
